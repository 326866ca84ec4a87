package main

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// sqlFloor measures what MariaDB pays per order row of the drain's
// transaction, for the orders table as shipped and for other layouts of it:
// workers write rows in transactions of batch rows each (an optional
// read of which order ids are there, the multi-row insert, the guarded
// increment of the SKU's sold), and MariaDB's CPU time is read from /proc.
// Nothing of seckill runs: this is the floor under the drain's figure.
func sqlFloor(cfg config, out io.Writer) error {
	pid := findSQLServer()
	if pid == 0 {
		return fmt.Errorf("no local mariadbd or mysqld to measure")
	}
	tag := strconv.FormatInt(time.Now().Unix()%1_000_000, 36)
	dsn, drop, err := createDB(cfg.mysql, "sqlfloor_"+tag)
	if err != nil {
		return err
	}
	defer drop()
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return err
	}
	mc.InterpolateParams = true // as seckill's own connections
	db, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	db.SetMaxOpenConns(cfg.floorWorkers + 1)

	const shipped = "PRIMARY KEY (id), UNIQUE KEY orders_order_id (order_id), KEY orders_sku_status (sku_id, status), KEY orders_user_created (user_id, created_at, order_id)"
	layouts := []struct{ name, id, keys string }{
		{"as shipped (id, order_id unique, (sku_id, status), (user_id, created_at, order_id))", "id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,", shipped},
		{"with orders_user (user_id, sku_id) as before migration 00004", "id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,", shipped + ", KEY orders_user (user_id, sku_id)"},
		{"order_id as the primary key, no id", "", "PRIMARY KEY (order_id), KEY orders_sku_status (sku_id, status), KEY orders_user_created (user_id, created_at, order_id)"},
		{"id and order_id unique only", "id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,", "PRIMARY KEY (id), UNIQUE KEY orders_order_id (order_id)"},
	}
	fmt.Fprintf(out, "MariaDB CPU per order row: %d rows per layout, %d workers; each transaction: [read ids,] insert, guarded sold += n, commit\n\n", cfg.floorRows, cfg.floorWorkers)
	fmt.Fprintln(out, "| orders layout | rows per transaction | read which ids exist first | µs per row | rows/s |")
	fmt.Fprintln(out, "|---|---:|---|---:|---:|")
	for _, batch := range []int{25, 300} {
		for i, l := range layouts {
			for _, readFirst := range []bool{false, true} {
				if readFirst && i > 0 {
					continue
				}
				if err := floorTable(db, l.id, l.keys); err != nil {
					return err
				}
				perRow, rate, err := floorRun(db, pid, cfg.floorRows, batch, cfg.floorWorkers, readFirst)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "| %s | %d | %v | %.1f | %.0f |\n", l.name, batch, yesNo(readFirst), perRow, rate)
			}
		}
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// floorTable creates the skus row and an empty orders table with the
// shipped columns and the given id column and keys.
func floorTable(db *sql.DB, id, keys string) error {
	for _, q := range []string{
		"DROP TABLE IF EXISTS orders",
		"DROP TABLE IF EXISTS skus",
		`CREATE TABLE skus (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, stock_total BIGINT NOT NULL, sold BIGINT NOT NULL DEFAULT 0,
			updated_at DATETIME(3) NOT NULL, PRIMARY KEY (id), CONSTRAINT skus_sold_within_stock CHECK (sold >= 0 AND sold <= stock_total))`,
		"INSERT INTO skus (stock_total, updated_at) VALUES (1000000000, NOW(3))",
		`CREATE TABLE orders (` + id + `
			order_id VARCHAR(64) NOT NULL, sku_id BIGINT UNSIGNED NOT NULL, user_id VARCHAR(64) NOT NULL,
			request_id VARCHAR(64) NULL, qty INT NOT NULL, price_cents BIGINT NOT NULL, status VARCHAR(20) NOT NULL,
			fence BIGINT NOT NULL DEFAULT 0, created_at DATETIME(3) NOT NULL, persisted_at DATETIME(3) NOT NULL,
			expires_at DATETIME(3) NOT NULL, paid_at DATETIME(3) NULL, closed_at DATETIME(3) NULL,
			updated_at DATETIME(3) NOT NULL, ` + keys + `, CONSTRAINT orders_qty_positive CHECK (qty > 0))`,
	} {
		if _, err := db.Exec(q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// floorRun writes rows order rows in transactions of batch and returns
// MariaDB's CPU µs per row and the rows per second.
func floorRun(db *sql.DB, pid, rows, batch, workers int, readFirst bool) (float64, float64, error) {
	var mu sync.Mutex
	next := 0
	take := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if next >= rows {
			return false
		}
		next += batch
		return true
	}
	insert := "INSERT INTO orders (order_id, sku_id, user_id, request_id, qty, price_cents, status, fence, created_at, persisted_at, expires_at, paid_at, closed_at, updated_at) VALUES " +
		strings.TrimSuffix(strings.Repeat("(?, 1, ?, NULL, 1, 99900, 'pending_payment', 0, ?, ?, ?, NULL, NULL, ?),", batch), ",")
	read := "SELECT order_id, sku_id, status FROM orders WHERE order_id IN (?" + strings.Repeat(", ?", batch-1) + ")"
	errs := make(chan error, workers)
	cpu0, t0 := cpuSeconds(pid), time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for take() {
				if err := floorTx(db, insert, read, batch, readFirst); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(t0), cpuSeconds(pid)-cpu0
	select {
	case err := <-errs:
		return 0, 0, err
	default:
	}
	return cpu / float64(next) * 1e6, float64(next) / elapsed.Seconds(), nil
}

// floorTx is one transaction of the drain's shape: order ids roughly in
// time order, as internal/orderid makes them, and a new shopper per order.
func floorTx(db *sql.DB, insert, read string, batch int, readFirst bool) error {
	now := time.Now().UTC()
	ids := make([]any, batch)
	args := make([]any, 0, 6*batch)
	random := make([]byte, 8*batch)
	_, _ = rand.Read(random)
	for i := range batch {
		ids[i] = fmt.Sprintf("1-%013x%011x", now.UnixMilli(), random[8*i:8*i+5])
		user := "floor-" + hex.EncodeToString(random[8*i+5:8*i+8]) + strconv.Itoa(i)
		args = append(args, ids[i], user, now, now, now.Add(15*time.Minute), now)
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if readFirst {
		rows, err := tx.Query(read, ids...)
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		_ = rows.Close()
	}
	if _, err := tx.Exec(insert, args...); err != nil {
		return err
	}
	if _, err := tx.Exec("UPDATE skus SET sold = sold + ?, updated_at = ? WHERE id = 1 AND sold + ? <= stock_total", batch, now, batch); err != nil {
		return err
	}
	return tx.Commit()
}
