package config

import (
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestComposeConfiguresAValidServer loads docker-compose.yml as docker
// compose v2 does and checks that the environment it gives seckill, with
// nothing set by the user, is a configuration serve starts with: a real
// Redis and MySQL, an admin token long enough, and auth.mode and
// payment.mode set.
func TestComposeConfiguresAValidServer(t *testing.T) {
	for name, userEnv := range map[string][]string{
		"defaults": nil,
		"jwt mode": {"SECKILL_AUTH_MODE=jwt", "SECKILL_AUTH_JWT_SECRET=compose-test-jwt-secret-0123456789abcdef"},
		"webhook mode": {"SECKILL_PAYMENT_MODE=webhook",
			"SECKILL_PAYMENT_WEBHOOK_SECRET=whsec_Y29tcG9zZS10ZXN0LXdlYmhvb2sta2V5LTAxMjM0NTY3"},
		"stripe mode": {"SECKILL_PAYMENT_MODE=stripe", "SECKILL_PAYMENT_STRIPE_SECRET_KEY=sk_test_composeTestKey0123",
			"SECKILL_PAYMENT_STRIPE_WEBHOOK_SECRET=whsec_composeTestSigning0123"},
		"failover": {"SECKILL_REDIS_ADDRS=sentinel-1:26379,sentinel-2:26379,sentinel-3:26379",
			"SECKILL_REDIS_MASTER_NAME=seckill", "SECKILL_REDIS_WAIT_REPLICAS=1"},
		"kafka":    {"SECKILL_EVENTS_KAFKA_BROKERS=kafka:9092"},
		"rabbitmq": {"SECKILL_EVENTS_AMQP_URL=amqp://guest:guest@rabbitmq:5672/"},
	} {
		opts, err := cli.NewProjectOptions([]string{"../../docker-compose.yml"}, cli.WithName("seckill"),
			cli.WithEnv(userEnv), cli.WithProfiles([]string{"failover", "kafka", "rabbitmq"}))
		require.NoError(t, err, name)
		project, err := opts.LoadProject(t.Context())
		require.NoError(t, err, name)
		svc, err := project.GetService("seckill")
		require.NoError(t, err, name)
		env := map[string]string{}
		for k, v := range svc.Environment {
			if v != nil {
				env[k] = *v
			}
		}
		assert.Empty(t, UnknownEnv(environ(env)), name)
		c, err := Load("", func(k string) string { return env[k] })
		require.NoError(t, err, name)
		assert.True(t, c.External(), name)
		if name == "failover" {
			assert.Equal(t, "seckill", c.Redis.MasterName)
			assert.Len(t, c.Redis.Addrs, 3)
			assert.Equal(t, 1, c.Redis.WaitReplicas)
			for _, s := range []string{"redis-replica", "sentinel-1", "sentinel-2", "sentinel-3"} {
				_, err := project.GetService(s)
				assert.NoError(t, err, "the failover profile has %s", s)
			}
		}
		switch name {
		case "kafka":
			assert.Equal(t, []string{"kafka:9092"}, c.Events.Kafka.BrokerList())
			_, err := project.GetService("kafka")
			assert.NoError(t, err, "the kafka profile has a broker")
		case "rabbitmq":
			assert.Equal(t, "amqp://guest:guest@rabbitmq:5672/", c.Events.AMQPURL)
			_, err := project.GetService("rabbitmq")
			assert.NoError(t, err, "the rabbitmq profile has a broker")
		default:
			assert.False(t, c.Events.On(), "events are off unless a receiver is set")
		}
		_, err = c.ShopperAuth()
		assert.NoError(t, err, name)
		mode, err := c.PaymentConfirmation()
		assert.NoError(t, err, name)
		switch name {
		case "webhook mode":
			assert.Equal(t, PaymentWebhook, mode)
			assert.Len(t, c.Payment.Secrets(), 1)
		case "stripe mode":
			assert.Equal(t, PaymentStripe, mode)
			assert.Len(t, c.Payment.Stripe.WebhookSecrets(), 1)
		default:
			assert.Equal(t, PaymentTrusted, mode, "shoppers pay their own orders")
		}
	}
}

func environ(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}
