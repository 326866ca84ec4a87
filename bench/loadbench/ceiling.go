package main

import (
	"log"
	"net/http"
	"os"
	"time"

	"github.com/gin-gonic/gin"
)

// runCeiling serves the ceiling: a Gin engine with one no-op handler that
// answers every buy with a 409 body of the same size as seckill's sold-out
// answer. It is the fastest any Gin JSON endpoint can be on this machine.
func runCeiling(addr, detail string) {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.POST("/api/v1/orders", func(c *gin.Context) {
		c.JSON(http.StatusConflict, gin.H{"error": "sold_out", "detail": detail})
	})
	log.SetOutput(os.Stderr)
	// The timeouts of seckill's http defaults (configs/config.yaml), so that
	// both servers treat slow clients alike.
	srv := &http.Server{
		Addr:              addr,
		Handler:           r,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
	log.Fatal(srv.ListenAndServe())
}
