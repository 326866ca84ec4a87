package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/seedfile"
)

// A seed file gives a SKU a waiting room: YAML as the API's body, CSV with
// room_ columns; room_ columns without room_opens_at are refused.
func TestSeedFileWaitingRoom(t *testing.T) {
	readRows := func(path string) ([]seedfile.Row, error) {
		f, err := readFile(path)
		return f.Rows, err
	}
	opens := "2030-01-02T03:00:00Z"
	yamlRows, err := readRows(writeFile(t, "room.yaml", `
- {id: 4, name: A, waiting_room: {opens_at: `+opens+`, mode: fifo, admit_per_second: 50, pass_ttl: 90s, overbook: 1.1}}
`))
	require.NoError(t, err)
	csvRows, err := readRows(writeFile(t, "room.csv", "id,name,room_opens_at,room_mode,room_admit_per_second,room_pass_ttl,room_overbook\n"+
		"4,A,"+opens+",fifo,50,90s,1.1\n5,B,,,,,\n"))
	require.NoError(t, err)
	for name, rows := range map[string][]seedfile.Row{"yaml": yamlRows, "csv": csvRows} {
		got := rows[0].Spec.WaitingRoom
		require.NotNil(t, got, name)
		assert.Equal(t, opens, got.OpensAt.UTC().Format(time.RFC3339), name)
		assert.Equal(t, "fifo", got.Mode, name)
		assert.Equal(t, 50, got.AdmitPerSecond, name)
		assert.Equal(t, 90*time.Second, time.Duration(got.PassTTL), name)
		assert.InDelta(t, 1.1, got.Overbook, 1e-9, name)
	}
	assert.Nil(t, csvRows[1].Spec.WaitingRoom)

	_, err = readRows(writeFile(t, "bad.csv", "id,name,room_mode\n4,A,fifo\n"))
	assert.ErrorContains(t, err, "room_opens_at")
	_, err = readRows(writeFile(t, "bad.csv", "id,name,room_opens_at,room_pass_ttl\n4,A,"+opens+",soon\n"))
	assert.ErrorContains(t, err, "pass_ttl")
}
