# Sourced by scripts/test: mdBook, which builds the user guide (docs/). Debian
# has no package for it, so it is built from crates.io into
# .ci-cache/mdbook once (without the `serve` and `watch` features, which
# only an author previewing the guide needs) and reused while the pinned
# version stays the same. Exports MDBOOK, the binary's path.
mdbook_version="0.5.4"
mdbook_root="$cache/mdbook"
MDBOOK="$mdbook_root/bin/mdbook"
if [ ! -x "$MDBOOK" ] || [ "$(cat "$mdbook_root/.version" 2>/dev/null)" != "$mdbook_version" ]; then
  echo "== installing mdbook $mdbook_version in $mdbook_root"
  rm -rf "$mdbook_root"
  CARGO_TARGET_DIR="$cache/mdbook-build" cargo install mdbook --locked --quiet \
    --version "$mdbook_version" --no-default-features --features search \
    --root "$mdbook_root"
  rm -rf "$cache/mdbook-build"
  echo "$mdbook_version" > "$mdbook_root/.version"
fi
export MDBOOK
