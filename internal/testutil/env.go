package testutil

// RecoveryEnv is the environment of a seckill process in a fault or chaos
// run: the Redis at redisAddr with keys under prefix, the MySQL database
// dsn, header auth, trusted payment (shoppers pay their own orders), no rate
// limit, and short leases, sweeps and back-offs so that recovery shows within
// seconds. Callers add or override variables.
func RecoveryEnv(redisAddr, prefix, dsn, adminToken string) map[string]string {
	return map[string]string{
		"SECKILL_REDIS_ADDRS":              redisAddr,
		"SECKILL_REDIS_KEY_PREFIX":         prefix,
		"SECKILL_REDIS_CONNECT_TIMEOUT":    "20s",
		"SECKILL_MYSQL_DSN":                dsn,
		"SECKILL_MYSQL_CONNECT_TIMEOUT":    "20s",
		"SECKILL_ADMIN_TOKEN":              adminToken,
		"SECKILL_AUTH_MODE":                "header",
		"SECKILL_PAYMENT_MODE":             "trusted",
		"SECKILL_RATE_LIMIT_ENABLED":       "false",
		"SECKILL_WORKER_LEASE":             "2s",
		"SECKILL_WORKER_SWEEP_INTERVAL":    "500ms",
		"SECKILL_WORKER_SKU_REFRESH":       "200ms",
		"SECKILL_WORKER_BATCH_SIZE":        "50",
		"SECKILL_WORKER_RETRY_BACKOFF_MAX": "1s",
		"SECKILL_HTTP_SHUTDOWN_TIMEOUT":    "5s",
		"SECKILL_LOG_LEVEL":                "info",
		"SECKILL_LOG_FORMAT":               "json",
	}
}
