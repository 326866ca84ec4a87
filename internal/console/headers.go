package console

import (
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"
)

// csp is the console's Content-Security-Policy: its own script and
// stylesheet only, no inline script or style, no framing.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// securityHeaders are on every answer under /console, the admin API's
// answers to the console included.
func securityHeaders(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	c.Next()
}

// sameOrigin refuses a request that may change something when the browser
// says it comes from another site: the SameSite cookie and the CSRF token
// already stop one, and this refuses it before any of them is read.
func sameOrigin(c *gin.Context) {
	if m := c.Request.Method; m == http.MethodGet || m == http.MethodHead {
		c.Next()
		return
	}
	if site := c.GetHeader("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		refuse(c, http.StatusForbidden, "cross_site", "the console takes changes from its own pages only")
		return
	}
	if origin := c.GetHeader("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host != c.Request.Host && u.Host != c.GetHeader("X-Forwarded-Host") {
			refuse(c, http.StatusForbidden, "cross_site", "the console takes changes from its own pages only")
			return
		}
	}
	c.Next()
}
