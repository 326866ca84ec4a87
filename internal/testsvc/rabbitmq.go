package testsvc

import (
	"net/url"
	"os/exec"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// EnvAMQP names the RabbitMQ server, as an AMQP URL of its default vhost
// with a user that may make vhosts: amqp://guest:guest@127.0.0.1:5672/.
const EnvAMQP = "SECKILL_TEST_AMQP_URL"

// RabbitMQ makes a vhost of the test's own on the RabbitMQ server of
// EnvAMQP, lets the URL's user use it, and returns the URL of the vhost;
// the vhost and all in it are deleted when the test ends. Vhosts are made
// with rabbitmqctl, which must reach the server's node (it runs on the same
// machine, as scripts/test-services.sh starts it).
func RabbitMQ(t testing.TB) string {
	t.Helper()
	base := Env(t, EnvAMQP)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvAMQP, err)
	}
	ctl, err := exec.LookPath("rabbitmqctl")
	if err != nil {
		ctl = "/usr/sbin/rabbitmqctl" // Debian's, which not every PATH has
	}
	vhost := "seckill-test-" + RandomID(6)
	rabbitmqctl(t, ctl, "add_vhost", vhost)
	t.Cleanup(func() { rabbitmqctl(t, ctl, "delete_vhost", vhost) })
	rabbitmqctl(t, ctl, "set_permissions", "-p", vhost, u.User.Username(), ".*", ".*", ".*")
	u.Path = "/" + vhost
	conn, err := amqp.Dial(u.String())
	if err != nil {
		Missing(t, "RabbitMQ at %s: %v; %s", u.Host, err, startServicesMsg)
	}
	_ = conn.Close()
	return u.String()
}

func rabbitmqctl(t testing.TB, ctl string, args ...string) {
	t.Helper()
	out, err := exec.Command(ctl, append([]string{"-q"}, args...)...).CombinedOutput()
	if err != nil {
		Missing(t, "rabbitmqctl %s: %v: %s; %s", strings.Join(args, " "), err, out, startServicesMsg)
	}
}
