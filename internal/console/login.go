package console

import (
	"math"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
)

// loginPage asks for the admin token; a browser with a session goes on to
// the sales.
func (c *Console) loginPage(ctx *gin.Context) {
	if value, err := ctx.Cookie(cookieName); err == nil {
		if _, ok := c.sessions.check(value); ok {
			ctx.Redirect(http.StatusSeeOther, "/console")
			return
		}
	}
	c.render(ctx, http.StatusOK, "login", pageData{Title: "Log in"})
}

// login takes the admin token from the form and answers a session cookie.
// A wrong token is 401 and says nothing but that; after 10 wrong tokens
// from one address in a minute (counted as they arrive, before their token
// is read), its logins are 429 until the minute ends.
func (c *Console) login(ctx *gin.Context) {
	addr := ctx.ClientIP()
	if wait, ok := c.failures.attempt(addr); !ok {
		ctx.Header("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		c.render(ctx, http.StatusTooManyRequests, "login", pageData{Title: "Log in",
			Error: "Too many wrong tokens from your address: wait a minute and try again."})
		return
	}
	if !sameToken(ctx.PostForm("token"), c.token) {
		c.log.Warn("console: login with a wrong admin token", "client", addr)
		c.render(ctx, http.StatusUnauthorized, "login", pageData{Title: "Log in",
			Error: "That is not the admin token. It is admin.token (SECKILL_ADMIN_TOKEN), or in embedded mode the admin_token of the EMBEDDED MODE warning in the server's log."})
		return
	}
	c.failures.forgive(addr)
	_, value := c.sessions.issue()
	http.SetCookie(ctx.Writer, cookie(value, int(c.sessions.ttl.Seconds()), overTLS(ctx.Request)))
	c.log.Info("console: admin logged in", "client", addr)
	ctx.Redirect(http.StatusSeeOther, "/console")
}

// logout deletes the session cookie. The cookie's value stays valid until
// it expires: a copy of it taken before the logout still works until then.
func (c *Console) logout(ctx *gin.Context) {
	http.SetCookie(ctx.Writer, cookie("", -1, overTLS(ctx.Request)))
	ctx.Redirect(http.StatusSeeOther, "/console/login")
}
