// Package buildinfo holds the version stamped into the binary at build time.
package buildinfo

import "runtime/debug"

// Version is set with -ldflags "-X github.com/seckill/seckill/internal/buildinfo.Version=...".
var Version = "dev"

// String returns the version and, when the binary was built from a module
// checkout, the VCS revision.
func String() string {
	v := Version
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " (" + s.Value[:12] + ")"
			}
		}
		v += " " + info.GoVersion
	}
	return v
}
