package main

import (
	"log"
	"net/http"
	"os"

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
	log.Fatal(http.ListenAndServe(addr, r))
}
