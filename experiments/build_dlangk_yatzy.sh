#!/usr/bin/env bash
# Build dlangk/yatzy's solve and lockstep-play binaries, for `bench solve --dlangk DIR` and
# `bench evaluate --dlangk DIR` (DIR: the folder this prints at the end).
#
#   experiments/build_dlangk_yatzy.sh SRC OUT            # its crates from crates.io
#   experiments/build_dlangk_yatzy.sh SRC OUT --debian   # offline, from Debian's packaged crates
#
# SRC: a checkout of https://github.com/dlangk/yatzy (built here: 35290bf). OUT: a new folder;
# the solver is copied there and built with its own profile (fat LTO, one codegen unit) and its
# own .cargo/config.toml (target-cpu=native: without it, its solve took 3.8x as long on an Intel
# Xeon with AVX-512).
#
# --debian, for a machine without crates.io: `apt-get install librust-rayon-dev librust-rand-dev
# librust-memmap2-dev librust-serde-dev librust-serde-derive-dev librust-serde-json-dev` first
# (Debian 12: rayon 1.6, rand 0.8, memmap2 0.5). Its manifest then asks for those versions and
# leaves out its HTTP server (axum, tokio, tower-http: Debian 12 has no axum 0.8), and rand 0.9's
# method names become 0.8's (random_range -> gen_range, random -> gen). Neither binary serves
# HTTP, and its lockstep dice come from its own SplitMix64, not rand; its solve uses no random
# numbers at all.
set -euo pipefail

if [[ $# -lt 2 || ! -f "$1/solver/Cargo.toml" ]]; then
    echo "usage: $0 SRC OUT [--debian]  (SRC: a checkout of github.com/dlangk/yatzy)" >&2
    exit 2
fi
src=$1 out=$2 debian=${3:-}
mkdir -p "$out"
cp -r "$src/solver" "$out/"
cd "$out/solver"

if [[ $debian == --debian ]]; then
    registry=/usr/share/cargo/registry
    for crate in rayon rand memmap2 serde serde_derive serde_json; do
        compgen -G "$registry/$crate-[0-9]*" > /dev/null || {
            echo "$0: no $crate in $registry (apt-get install librust-${crate//_/-}-dev)" >&2
            exit 2
        }
    done
    python3 - <<'EOF'
from pathlib import Path

manifest = Path("Cargo.toml")
text = manifest.read_text()
start, end = text.index("[dependencies]"), text.index("[features]")
dependencies = """[dependencies]
serde = { version = "1", features = ["derive"] }
serde_json = "1"
rayon = { version = "1.6", optional = true }
rand = { version = "0.8", features = ["small_rng"] }
memmap2 = { version = "0.5", optional = true }

"""
text = text[:start] + dependencies + text[end:]
full = 'full = ["dep:axum", "dep:tokio", "dep:rayon", "dep:memmap2", "dep:tower-http"]'
assert full in text, "its [features] changed: update this script"
manifest.write_text(text.replace(full, 'full = ["dep:rayon", "dep:memmap2"]'))

library = Path("src/lib.rs")
text = library.read_text()
assert "pub mod server;" in text, "its lib.rs changed: update this script"
library.write_text(text.replace("pub mod server;", "// pub mod server; (axum: not built)"))

renames = {".random_range(": ".gen_range(", ".random()": ".gen()", ".random::<": ".gen::<",
           ".random_bool(": ".gen_bool(", "rand::rng()": "rand::thread_rng()"}
for path in Path("src").rglob("*.rs"):
    text = path.read_text()
    for new, old in renames.items():
        text = text.replace(new, old)
    path.write_text(text)
EOF
    rm -f Cargo.lock
    cat >> .cargo/config.toml <<EOF

# Added by build_dlangk_yatzy.sh --debian: crates from Debian's packaged registry, offline.
[source.crates-io]
replace-with = "debian"
[source.debian]
directory = "$registry"
[net]
offline = true
EOF
fi

cargo build --release --bin yatzy-precompute --bin yatzy-simulate
echo "built: $PWD/target/release (pass it as --dlangk)"
