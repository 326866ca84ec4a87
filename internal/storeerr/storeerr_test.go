package storeerr

import (
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
)

// A MySQL out of connections refuses work for now: retry. A MySQL error
// about the request itself is not.
func TestMySQLOverItsLimitIsUnavailable(t *testing.T) {
	for _, tc := range []struct {
		number uint16
		want   bool
	}{{1040, true}, {1203, true}, {1135, true}, {1062, false}, {1146, false}} {
		err := fmt.Errorf("catalog: get 7: %w", &mysql.MySQLError{Number: tc.number, Message: "x"})
		assert.Equal(t, tc.want, Unavailable(err), "error %d", tc.number)
	}
}
