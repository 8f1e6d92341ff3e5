#!/usr/bin/env bash
# Release binaries (make release): a static helix for each of PLATFORMS into DIST, and
# DIST/SHA256SUMS for `sha256sum -c`. CGO_ENABLED=0 and -trimpath make the binaries
# run on any Linux or macOS of their architecture and build the same from the same
# commit; the version, commit and commit date are stamped for `helix version`. A static
# build leaves out ONNX embeddings (cgo): see docs/deployment.md.
#
# Environment (defaults in brackets): GO [go], DIST [dist], VERSION [git describe],
# COMMIT [git rev-parse --short=12 HEAD], DATE [the commit's time, UTC],
# PLATFORMS ["linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"].
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO=${GO:-go}
DIST=${DIST:-dist}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
COMMIT=${COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
DATE=${DATE:-$(TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)}

pkg=github.com/arvenza/helix/internal/cli
ldflags="-s -w -X $pkg.Version=$VERSION -X $pkg.Commit=$COMMIT -X $pkg.Date=$DATE"

for p in $PLATFORMS; do
	if [[ ! $p =~ ^[a-z0-9]+/[a-z0-9]+$ ]]; then
		echo "release: platform \"$p\": write it as OS/ARCH, for example linux/amd64" >&2
		exit 2
	fi
done

mkdir -p "$DIST"
names=()
for p in $PLATFORMS; do
	os=${p%/*} arch=${p#*/}
	name="helix_${VERSION}_${os}_${arch}"
	echo "release: $name" >&2
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath -ldflags "$ldflags" -o "$DIST/$name" ./cmd/helix
	names+=("$name")
done

# sha256sum on Linux, shasum on macOS: the same "HEX  NAME" lines.
sum() { if command -v sha256sum >/dev/null; then sha256sum "$@"; else shasum -a 256 "$@"; fi; }
(cd "$DIST" && sum "${names[@]}" > SHA256SUMS)
echo "release: $DIST/SHA256SUMS (check with: cd $DIST && sha256sum -c SHA256SUMS)" >&2
