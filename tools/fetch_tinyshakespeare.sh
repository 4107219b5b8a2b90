#!/usr/bin/env bash
# Downloads tiny-shakespeare (1.1 MB, Karpathy's char-rnn corpus, the text of nanoGPT's
# shakespeare_char) to .data/tinyshakespeare/input.txt and checks its SHA-256.
# Training needs no download (train_gpt's default corpus is built in); this is for the
# reference configuration, whose target val loss is measured on this text.
#   tools/fetch_tinyshakespeare.sh          # then: train_gpt --data .data/tinyshakespeare/input.txt
# Without the internet, copy the file from elsewhere and pass it with --data PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

url=https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt
sha256=86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed
dest=.data/tinyshakespeare/input.txt

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

if [[ -f $dest && $(sha_of "$dest") == "$sha256" ]]; then
  echo "$dest is already here (sha256 ok)"
  exit 0
fi
mkdir -p "$(dirname "$dest")"
tmp="$dest.part"
trap 'rm -f "$tmp"' EXIT
if command -v curl > /dev/null; then
  fetch=(curl -fsSL --connect-timeout 10 --max-time 120 -o "$tmp" "$url")
elif command -v wget > /dev/null; then
  fetch=(wget -q --timeout=10 -O "$tmp" "$url")
else
  echo "error: neither curl nor wget is installed" >&2
  exit 1
fi
if ! "${fetch[@]}"; then
  cat >&2 <<MSG
error: could not download $url
(no internet connection here?). Train without it: train_gpt uses its built-in corpus
when given no --data. Or copy input.txt from a machine that has it and pass it to
train_gpt with --data PATH (any UTF-8 text works), or put it at $dest.
MSG
  exit 1
fi
got=$(sha_of "$tmp")
if [[ $got != "$sha256" ]]; then
  echo "error: $url has sha256 $got, expected $sha256 (changed upstream or corrupted)" >&2
  exit 1
fi
mv "$tmp" "$dest"
echo "wrote $dest ($(wc -c < "$dest") bytes, sha256 ok)"
