package console

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/outbox"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// The page reads what GET /admin/events/receivers answers.
var _ Receivers = outbox.Admin{}

// fakeReceivers answers its backlog, or err; reads counts its calls.
type fakeReceivers struct {
	backlog []outbox.Backlog
	err     error
	reads   atomic.Int32
}

func (f *fakeReceivers) Receivers(context.Context) ([]outbox.Backlog, error) {
	f.reads.Add(1)
	return f.backlog, f.err
}

// receiversPage logs in to a console on rs and answers its order events
// page.
func receiversPage(t *testing.T, rs Receivers) (int, string) {
	t.Helper()
	_, h := newTestWith(t, Options{Token: token, Receivers: rs, Now: testutil.NewClock(time.Now()).Now})
	cookie, _ := sessionOf(t, h)
	w := do(h, "GET", "/console/receivers", nil, withCookie(cookie))
	return w.Code, w.Body.String()
}

// row returns the cells of receiver name's row.
func row(t *testing.T, body, name string) []string {
	t.Helper()
	tr := regexp.MustCompile(`(?s)<tr data-receiver="` + regexp.QuoteMeta(name) + `">(.*?)</tr>`).FindStringSubmatch(body)
	require.NotNil(t, tr, "a row for %s in\n%s", name, body)
	var cells []string
	for _, m := range regexp.MustCompile(`<t[hd][^>]*>([^<]*)</t[hd]>`).FindAllStringSubmatch(tr[1], -1) {
		cells = append(cells, m[1])
	}
	return cells
}

func TestTheEventsPageListsEveryReceiversBacklog(t *testing.T) {
	rs := &fakeReceivers{backlog: []outbox.Backlog{
		{Receiver: "analytics", Pending: 1200, Delivered: 98000, Dead: 3, OldestPendingSeconds: 90.4},
		{Receiver: "crm", Pending: 1, Delivered: 7, OldestPendingSeconds: 0.25},
		{Receiver: "warehouse", Delivered: 42},
		{Receiver: `<b>"x"&y`, Pending: 5},
	}}
	code, body := receiversPage(t, rs)
	require.Equal(t, http.StatusOK, code, body)
	// Name, pending, oldest pending, dead letters, delivered.
	assert.Equal(t, []string{"analytics", "1200", "1m30s", "3", "98000"}, row(t, body, "analytics"))
	assert.Equal(t, []string{"crm", "1", "250ms", "0", "7"}, row(t, body, "crm"))
	assert.Equal(t, []string{"warehouse", "0", "–", "0", "42"}, row(t, body, "warehouse"), "none pending: no age")
	assert.Equal(t, []string{"&lt;b&gt;&#34;x&#34;&amp;y", "5", "–", "0", "0"}, row(t, body, "&lt;b&gt;&#34;x&#34;&amp;y"),
		"a name is escaped")
	assert.NotContains(t, body, `<b>"x"`)
	assert.Contains(t, body, `<a href="/console/receivers" aria-current="page">Order events</a>`, "the navigation marks the page")
	assert.NotContains(t, body, `id="events-off"`)
	assert.NotContains(t, body, `role="alert"`)
	assert.Equal(t, int32(1), rs.reads.Load())

	code, body = receiversPage(t, &fakeReceivers{})
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "No receiver yet", "events on, no dispatcher has registered its receivers")
}

func TestTheEventsPageSaysWhenEventsAreOff(t *testing.T) {
	code, body := receiversPage(t, nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `<p id="events-off" class="muted">Order events are off: no receiver is configured`)
	assert.NotContains(t, body, `<table`)
}

func TestTheEventsPageShowsAStoreErrorRatherThanFailing(t *testing.T) {
	rs := &fakeReceivers{err: errors.New("outbox: count: dial tcp 10.0.0.9:3306: connect: connection refused")}
	code, body := receiversPage(t, rs)
	assert.Equal(t, http.StatusOK, code, "the page is served, with the problem on it")
	assert.Contains(t, body, `<p id="problem" class="error" role="alert">The receivers&#39; backlog could not be read from the SQL store just now; reload in a moment.</p>`)
	assert.NotContains(t, body, "10.0.0.9", "the store's own words stay in the log")
	assert.NotContains(t, body, `<table`)
	assert.Contains(t, body, `aria-current="page">Order events</a>`, "in the console's layout")
}

// With the real outbox: empty, then on a SQL store that is gone.
func TestTheEventsPageOnTheOutbox(t *testing.T) {
	db := testsvc.MigratedMySQL(t)
	admin := outbox.Admin{DB: db}
	code, body := receiversPage(t, admin)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "No receiver yet")

	sqlDB, err := db.DB()
	require.NoError(t, err)
	require.NoError(t, sqlDB.Close())
	code, body = receiversPage(t, admin)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `role="alert">The receivers&#39; backlog could not be read`)
}

func TestTheEventsPageNeedsASession(t *testing.T) {
	rs := &fakeReceivers{backlog: []outbox.Backlog{{Receiver: "analytics", Pending: 1}}}
	_, h := newTestWith(t, Options{Token: token, Receivers: rs, Now: time.Now})
	forged := withCookie(&http.Cookie{Name: cookieName, Value: "AAAAAGsIt__2TFPZ90DLOL2d9KzbqxqgDg-vxH7OriRckjvhgUzOK5tB8r5hD75cWqgeC6FsKoE"})
	for name, edit := range map[string]func(*http.Request){"no session": nil, "a forged one": forged} {
		w := do(h, "GET", "/console/receivers", nil, edit)
		assert.Equal(t, http.StatusSeeOther, w.Code, name)
		assert.Equal(t, "/console/login", w.Header().Get("Location"), name)
		assert.False(t, strings.Contains(w.Body.String(), "analytics"), name)
	}
	assert.Zero(t, rs.reads.Load(), "nothing is read for a visitor without a session")
}
