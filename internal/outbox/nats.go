package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATS is a sink publishing each event to NATS JetStream on subject
// <prefix>.<type> (seckill.order.created), with the event id as the message
// id: JetStream drops a message whose id it has seen within the stream's
// duplicate window, so a retry is stored once. The publish is acknowledged
// by the stream. When no stream takes the subject, one is made:
// <PREFIX>_EVENTS on <prefix>.>, file storage, with the duplicate window
// given (DuplicateWindow when zero).
type NATS struct {
	nc         *nats.Conn
	js         jetstream.JetStream
	prefix     string
	duplicates time.Duration
	format     Format
}

// DuplicateWindow is the default duplicate window of the stream NATS makes.
const DuplicateWindow = time.Hour

// NewNATS connects to the servers in url (comma-separated), reconnecting
// for as long as the process runs; a server not up yet is retried. A
// stream it makes has the duplicate window duplicates. Events are sent in
// format f (structured mode for CloudEvents).
func NewNATS(url, prefix string, duplicates time.Duration, f Format, log *slog.Logger) (*NATS, error) {
	nc, err := nats.Connect(url,
		nats.Name("seckill-events"),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("events: nats disconnected", "err", err.Error())
			}
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("outbox: nats %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("outbox: jetstream: %w", err)
	}
	return &NATS{nc: nc, js: js, prefix: prefix, duplicates: cmp.Or(duplicates, DuplicateWindow), format: f}, nil
}

// Name is "nats" (config.NATSName).
func (n *NATS) Name() string { return "nats" }

// Subject is the subject of events of type typ.
func (n *NATS) Subject(typ string) string { return n.prefix + "." + typ }

// Stream is the name of the stream NATS makes when none takes its subjects.
func (n *NATS) Stream() string {
	return strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(n.prefix)) + "_EVENTS"
}

// Send publishes e and waits for the stream's acknowledgement.
func (n *NATS) Send(ctx context.Context, e *Event) error {
	body, contentType, err := n.format.structured(e)
	if err != nil {
		return err
	}
	msg := &nats.Msg{Subject: n.Subject(e.Type), Data: body, Header: nats.Header{}}
	msg.Header.Set("Content-Type", contentType)
	_, err = n.js.PublishMsg(ctx, msg, jetstream.WithMsgID(e.EventID))
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
		if _, serr := n.js.CreateStream(ctx, jetstream.StreamConfig{
			Name: n.Stream(), Subjects: []string{n.prefix + ".>"}, Storage: jetstream.FileStorage,
			Duplicates: n.duplicates,
		}); serr != nil && !errors.Is(serr, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("create stream %s: %w", n.Stream(), serr)
		}
		_, err = n.js.PublishMsg(ctx, msg, jetstream.WithMsgID(e.EventID))
	}
	return err
}

// Close drains the connection.
func (n *NATS) Close() { n.nc.Close() }
