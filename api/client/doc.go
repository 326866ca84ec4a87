// Package client is a Go client of the seckill API, generated from
// api/openapi.yaml by oapi-codegen (client.gen.go; `make generate` or
// `go generate ./api/client` regenerates it). The project's end-to-end tests
// and bench tools call the server through it.
//
//	c, err := client.NewClientWithResponses("http://localhost:8080",
//		client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
//			r.Header.Set("X-User-ID", "alice") // or Authorization: Bearer <JWT>
//			return nil
//		}))
//	r, err := c.PlaceOrderWithResponse(ctx, client.PlaceOrderJSONRequestBody{SkuId: 1, Qty: 1})
//	// r.JSON202.OrderId, or r.JSON409.Error == "sold_out", ...
package client

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml ../openapi.yaml
