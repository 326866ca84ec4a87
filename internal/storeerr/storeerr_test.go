package storeerr

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A MySQL out of connections, or one that rolled back a transaction for a
// deadlock or a lock wait, refuses work for now: retry. A MySQL error about
// the request itself is not.
func TestMySQLOverItsLimitIsUnavailable(t *testing.T) {
	for _, tc := range []struct {
		number uint16
		want   bool
	}{{1040, true}, {1203, true}, {1135, true}, {1213, true}, {1205, true}, {1062, false}, {1146, false},
		{8002, true}, {8005, true}, {8022, true}, {8028, true}, {9001, true}, {9002, true}, {9003, true}, {9004, true}, {9005, true}, {9007, true},
		{8004, false}, {9006, false}} {
		err := fmt.Errorf("catalog: get 7: %w", &mysql.MySQLError{Number: tc.number, Message: "x"})
		assert.Equal(t, tc.want, Unavailable(err), "error %d", tc.number)
	}
}

// A connection go-redis closed under a command (during a Sentinel failover
// it fails the command with "invalid state transition", wrapped) is a
// store that could not be reached; a message that only mentions such an
// error is not.
func TestAConnectionClosedUnderACommandIsUnavailable(t *testing.T) {
	// As go-redis makes it: its internal sentinel value, wrapped twice.
	closed := fmt.Errorf("%w: cannot transition from CLOSED to INITIALIZING (valid from: [CREATED])",
		errors.New("invalid state transition"))
	assert.True(t, Unavailable(fmt.Errorf("stock: request id of sku 1: %w", closed)))
	assert.True(t, Unavailable(fmt.Errorf("stock: %w", errors.Join(errors.New("x"), errors.New("state machine is closed")))))
	assert.True(t, Unavailable(fmt.Errorf("room: %w", errors.New("connection in unexpected state after initialization: CLOSED"))))
	assert.False(t, Unavailable(errors.New("stock: invalid state transition of order 7")))
	assert.False(t, Unavailable(nil))
}

// Each text connErrors knows is one the go-redis in go.mod writes (a
// string literal of its client or its pool), so that an upgrade that
// rewords one fails here.
func TestConnErrorsAreGoRedis(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/redis/go-redis/v9").Output()
	require.NoError(t, err)
	dir := strings.TrimSpace(string(out))
	var src strings.Builder
	for _, pattern := range []string{"*.go", filepath.Join("internal", "pool", "*.go")} {
		files, err := filepath.Glob(filepath.Join(dir, pattern))
		require.NoError(t, err)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			src.Write(b)
		}
	}
	for _, text := range connErrors {
		literal := `"` + text + `")`
		if prefix, ok := strings.CutSuffix(text, ": "); ok {
			literal = `"` + prefix + `: %s"`
		}
		assert.True(t, strings.Contains(src.String(), literal), "go-redis %s writes no %s", dir, literal)
	}
}

func TestLockHeld(t *testing.T) {
	for _, tc := range []struct {
		err  error
		held bool
	}{
		{&mysql.MySQLError{Number: 1105, Message: "pessimistic lock retry limit reached"}, true},
		{fmt.Errorf("expand: %w", &mysql.MySQLError{Number: 1105, Message: "lock wait timeout"}), true},
		{&mysql.MySQLError{Number: 1105, Message: "other"}, false},
		{&mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock"}, false},
		{nil, false},
	} {
		assert.Equal(t, tc.held, LockHeld(tc.err), "%v", tc.err)
	}
}
