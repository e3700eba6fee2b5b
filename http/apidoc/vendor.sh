#!/usr/bin/env bash
# vendor.sh fetches the API reference viewer, swagger-ui-dist, from the npm registry with
# `npm pack` (no install: none of the package's scripts or dependencies run) and copies the files
# the /docs page needs into viewer/, with the package's license files and a README recording the
# package, version, license and tarball integrity. svc embeds viewer/ in its binary; nothing is
# fetched at run time.
#
#   bash http/apidoc/vendor.sh [version]     # default: the latest release
#   make vendor-docs-viewer [DOCS_VIEWER_VERSION=x.y.z]
#
# Afterwards: go test ./http/apidoc/ ./cmd/svc/node/ -run 'OpenAPI|Docs', and look at /docs.
set -euo pipefail

pkg=swagger-ui-dist
want_license=Apache-2.0
files=(swagger-ui-bundle.js swagger-ui-bundle.js.LICENSE.txt swagger-ui.css favicon-32x32.png LICENSE NOTICE package.json)

here=$(cd "$(dirname "$0")" && pwd)
dest=$here/viewer
version=${1:-}
if [ -z "$version" ]; then
	version=$(npm view "$pkg" version)
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --json --silent "$pkg@$version" >pack.json)
tarball=$(cd "$tmp" && node -p 'require("./pack.json")[0].filename')
integrity=$(cd "$tmp" && node -p 'require("./pack.json")[0].integrity')
tar -xzf "$tmp/$tarball" -C "$tmp"

got_version=$(node -p 'require(process.argv[1]).version' "$tmp/package/package.json")
license=$(node -p 'require(process.argv[1]).license' "$tmp/package/package.json")
if [ "$license" != "$want_license" ]; then
	echo "vendor.sh: $pkg@$got_version is licensed $license, not $want_license: check it before vendoring" >&2
	exit 1
fi
for f in "${files[@]}"; do
	if [ ! -f "$tmp/package/$f" ]; then
		echo "vendor.sh: $pkg@$got_version has no $f; the page (page.html) may need changes" >&2
		exit 1
	fi
done

rm -rf "$dest"
mkdir -p "$dest"
for f in "${files[@]}"; do
	cp "$tmp/package/$f" "$dest/$f"
done
cat >"$dest/README.md" <<README
# Vendored API reference viewer

The /docs page of svc renders /openapi.json with these files, embedded in the binary.

- package: $pkg (npm registry)
- version: $got_version
- license: $license (LICENSE and NOTICE here; the notices of the libraries bundled into
  swagger-ui-bundle.js are in swagger-ui-bundle.js.LICENSE.txt)
- tarball: https://registry.npmjs.org/$pkg/-/$tarball
- integrity: $integrity

Only the files the page needs are kept, unmodified: ${files[*]}.
The package was fetched with \`npm pack\`, not installed, so its install-time dependency
(@scarf/scarf, download analytics) never ran and is not part of svc.

To update: \`make vendor-docs-viewer\` (the latest release) or
\`make vendor-docs-viewer DOCS_VIEWER_VERSION=x.y.z\`, which runs ../vendor.sh; then run the
tests of http/apidoc and cmd/svc/node (-run 'OpenAPI|Docs') and look at /docs in a browser.
README
echo "vendored $pkg@$got_version ($license) into $dest"
