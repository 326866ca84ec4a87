package httpapi

import (
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routes registers every route of the API.
func routes(r *gin.Engine, d Deps) {
	r.GET("/healthz", handleHealthz(d.Mode, d.Version))
	r.GET("/readyz", handleReadyz(d.Ready, d.Log))
	r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{})))
}
