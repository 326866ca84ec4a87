// Package buildinfo holds the version and the licence the binary reports.
package buildinfo

import "runtime/debug"

// Release is the version of this source tree: the newest release
// CHANGELOG.md describes (a test keeps them equal).
const Release = "0.1.0"

// License names, as an SPDX identifier, the licence of the code (LICENSE).
const License = "Apache-2.0"

// LicenseLine is how the binary names its licence.
const LicenseLine = "Licensed under the Apache License 2.0 (" + License + "): https://www.apache.org/licenses/LICENSE-2.0"

// Version is the version the binary reports: Release, unless the build
// sets another with -ldflags "-X github.com/seckill/seckill/internal/buildinfo.Version=...".
var Version = Release

// String returns the version and, when the binary was built from a module
// checkout, the VCS revision (with "+dirty" for uncommitted changes) and
// the Go version.
func String() string {
	v := Version
	if info, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && len(s.Value) >= 12:
				rev = s.Value[:12]
			case s.Key == "vcs.modified" && s.Value == "true":
				dirty = "+dirty"
			}
		}
		if rev != "" {
			v += " (" + rev + dirty + ")"
		}
		v += " " + info.GoVersion
	}
	return v
}
