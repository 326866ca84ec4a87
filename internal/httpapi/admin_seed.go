package httpapi

import (
	"bytes"
	"log/slog"
	"mime"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/seedfile"
)

// seedTypes are the media types a seed file may be sent as.
const seedTypes = "text/csv, application/yaml"

var errSeedType = &Error{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type",
	Detail: "send a seed file as Content-Type: text/csv (a header row naming the columns) or application/yaml (a list of skus)"}

// seedFormat is the seed file form of the media type ct.
func seedFormat(ct string) (seedfile.Format, bool) {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return 0, false
	}
	switch mt {
	case "text/csv":
		return seedfile.CSV, true
	case "application/yaml", "application/x-yaml", "text/yaml":
		return seedfile.YAML, true
	}
	return 0, false
}

// handleSeed writes the SKUs of a seed file, the CSV or YAML that
// `seckill seed --file` reads: all of them, or none (sale.Service.Seed).
func handleSeed(admin Admin, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		format, ok := seedFormat(c.GetHeader("Content-Type"))
		if !ok {
			c.Header("Accept-Post", seedTypes)
			writeError(c, log, errSeedType)
			return
		}
		body, err := readBody(c)
		if err != nil {
			writeError(c, log, err)
			return
		}
		file, err := seedfile.Read(bytes.NewReader(body), format)
		if err != nil {
			writeError(c, log, invalid(err.Error()))
			return
		}
		seeded, drops, err := admin.Seed(c.Request.Context(), file)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{"items": seeded, "drops": drops})
	}
}
