#!/usr/bin/env bash
# Build the packages into build-package/: inferdesk and inferdesk-cuda, each as .deb and .tar.gz,
# with the CUDA code compiled for every supported GPU generation (80;86;89;90), then check them
# with lintian and appstreamcli. Extra arguments go to cmake's configure step (they come last, so
# e.g. -DCMAKE_CUDA_ARCHITECTURES=90 overrides the list).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
for p in dpkg-dev lintian appstream desktop-file-utils; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$p"
done
extra=()
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  extra+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi
cmake -S . -B build-package -G Ninja -DCMAKE_BUILD_TYPE=Release -DINFERDESK_BUILD_TESTS=OFF \
  "-DCMAKE_CUDA_ARCHITECTURES=80;86;89;90" "${extra[@]}" "$@"
cmake --build build-package --parallel "$(nproc)"
(cd build-package && cpack)
appstreamcli validate --no-net installer/io.inferdesk.InferDesk.metainfo.xml
desktop-file-validate installer/io.inferdesk.InferDesk.desktop
for deb in build-package/*.deb; do
  echo "lintian $deb"
  lintian --fail-on error "$deb"
done
ls -l build-package/*.deb build-package/*.tar.gz
