package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/seckill/seckill/api/client"
)

// newSale puts units on sale now, for an hour, one per shopper, as the
// admin, and returns the SKU's id.
func newSale(ctx context.Context, units int64) int64 {
	admin, err := client.New(baseURL, client.WithAdminToken(adminToken))
	if err != nil {
		log.Fatal(err)
	}
	now := time.Now()
	r, err := admin.UpsertSKUWithResponse(ctx, client.SKUSpec{
		Name: new("Phone X"), PriceCents: new(int64(99900)), Stock: new(units), PerUserLimit: new(1),
		StartsAt: new(now), EndsAt: new(now.Add(time.Hour)),
	})
	if err != nil {
		log.Fatal(err)
	}
	if r.JSON201 == nil {
		log.Fatalf("create the sale: %s %s", r.Status(), r.Body)
	}
	return r.JSON201.Id
}

// An admin creates a sale; a shopper buys in it, and a second buy is over
// the shopper's limit.
func ExampleClient_Buy() {
	ctx := context.Background()
	admin, err := client.New(baseURL, client.WithAdminToken(adminToken))
	if err != nil {
		log.Fatal(err)
	}
	now := time.Now()
	sale, err := admin.UpsertSKUWithResponse(ctx, client.SKUSpec{
		Name: new("Phone X"), PriceCents: new(int64(99900)), Stock: new(int64(10)), PerUserLimit: new(1),
		StartsAt: new(now), EndsAt: new(now.Add(time.Hour)),
	})
	if err != nil || sale.JSON201 == nil {
		log.Fatal("create the sale: ", err)
	}

	alice, err := client.New(baseURL, client.WithShopper("alice")) // or client.WithBearer(jwt)
	if err != nil {
		log.Fatal(err)
	}
	placed, err := alice.Buy(ctx, sale.JSON201.Id, 1)
	if err != nil {
		log.Fatal(err) // an *OutcomeUnknownError holds the request id to learn the outcome with
	}
	fmt.Println(placed.Status)

	_, err = alice.Buy(ctx, sale.JSON201.Id, 1)
	fmt.Println(errors.Is(err, client.ErrLimitExceeded))
	// Output:
	// queued
	// true
}

// The last unit goes to one shopper; the next is told the sale is sold out.
func ExampleClient_Buy_soldOut() {
	ctx := context.Background()
	sku := newSale(ctx, 1)
	for _, shopper := range []string{"alice", "bob"} {
		c, err := client.New(baseURL, client.WithShopper(shopper))
		if err != nil {
			log.Fatal(err)
		}
		_, err = c.Buy(ctx, sku, 1)
		var refused *client.APIError
		switch {
		case err == nil:
			fmt.Println(shopper, "bought it")
		case errors.Is(err, client.ErrSoldOut) && errors.As(err, &refused):
			fmt.Println(shopper, "was told", refused.Code)
		default:
			log.Fatal(err)
		}
	}
	// Output:
	// alice bought it
	// bob was told sold_out
}

// A request id kept before buying makes the buy safe to send again: the
// second Buy with it returns the first one's order instead of buying again.
func ExampleWithRequestID() {
	ctx := context.Background()
	sku := newSale(ctx, 10)
	alice, err := client.New(baseURL, client.WithShopper("alice"))
	if err != nil {
		log.Fatal(err)
	}
	id := "order-form-1842" // stored with the shopper's basket, say
	first, err := alice.Buy(ctx, sku, 1, client.WithRequestID(id))
	if err != nil {
		log.Fatal(err)
	}
	again, err := alice.Buy(ctx, sku, 1, client.WithRequestID(id))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(again.OrderId == first.OrderId)
	// Output: true
}

// The order is written to the database shortly after the buy; the shop
// polls it, through the same client, until it awaits payment.
func ExampleClient_GetOrderWithResponse() {
	ctx := context.Background()
	sku := newSale(ctx, 10)
	alice, err := client.New(baseURL, client.WithShopper("alice"))
	if err != nil {
		log.Fatal(err)
	}
	placed, err := alice.Buy(ctx, sku, 1)
	if err != nil {
		log.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r, err := alice.GetOrderWithResponse(ctx, placed.OrderId)
		if err != nil {
			log.Fatal(err)
		}
		if r.JSON200 != nil && r.JSON200.Status != client.OrderStatusQueued {
			fmt.Println(r.JSON200.Status, r.JSON200.Qty, r.JSON200.PriceCents)
			break
		}
		if time.Now().After(deadline) {
			log.Fatalf("order %s still %s", placed.OrderId, r.Body)
		}
	}
	// Output: pending_payment 1 99900
}
