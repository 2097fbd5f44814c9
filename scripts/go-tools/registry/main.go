// A lean `registry` (the CNCF distribution registry, what Docker Hub and Debian's
// docker-registry package run) for the private-registry test (tests/image/test_registry.py):
// upstream's cmd/registry with only the filesystem/inmemory storage and htpasswd auth.
// Upstream's main also links the S3, Azure and GCS drivers and the token auth, about twice the
// packages to compile on a cold machine; a local test registry needs none of them.
// Built by scripts/build-go-tools; `registry serve CONFIG.yml` as upstream.
package main

import (
	"os"

	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
)

func main() {
	if err := registry.RootCmd.Execute(); err != nil {
		os.Exit(1)
	}
}
