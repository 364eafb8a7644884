#!/usr/bin/env bash
# Renders realistic light fields from scenes shipped with Debian's povray-examples (textures,
# occlusions, reflections, specular highlights) on a camera grid like the HCI 4D benchmark's:
# UxV cameras with parallel optical axes on a plane, shifted along the camera's own right and
# up vectors by a baseline that gives the scene's centre of interest (the scene's look_at
# point) a disparity of --disparity pixels between neighbouring views (nearer objects more,
# farther ones less). Each light field is written in the HCI folder layout
# (input_Cam000.png .. row-major, view (0, 0) the top-left camera) with a parameters.cfg, and
# cached: a folder that is complete is not rendered again.
#
#   tools/lfrender.sh [--views UxV] [--size N] [--scenes "woodbox pawns biscuit desk"]
#                     [--disparity D] [--cache DIR] [--quality Q] [--jobs J]
#
# Defaults: 9x9 views of 512x512 (HCI's grid), disparity 1, POV-Ray quality 4 without
# anti-aliasing (cheap: about 2-6 s per 512x512 view on one core), every scene below,
# cache ${XDG_CACHE_HOME:-~/.cache}/tessera/lightfields. Prints one folder per scene.
# Needs `apt-get install povray povray-examples`.
set -euo pipefail

views=9x9 size=512 disparity=1 quality=4
scenes="woodbox pawns biscuit desk"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/tessera/lightfields"
jobs=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --views) views="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --scenes) scenes="$2"; shift 2 ;;
    --disparity) disparity="$2"; shift 2 ;;
    --cache) cache="$2"; shift 2 ;;
    --quality) quality="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "lfrender.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$views" =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]] || { echo "lfrender.sh: --views $views: expected UxV" >&2; exit 2; }
nu=${BASH_REMATCH[1]} nv=${BASH_REMATCH[2]}
[[ "$size" =~ ^[1-9][0-9]*$ ]] || { echo "lfrender.sh: --size $size: expected a pixel count" >&2; exit 2; }
command -v povray >/dev/null || { echo "lfrender.sh: povray not found: apt-get install povray povray-examples" >&2; exit 1; }
root=/usr/share/povray-3.7/scenes
[ -d "$root" ] || { echo "lfrender.sh: $root not found: apt-get install povray-examples" >&2; exit 1; }

# Per scene: its file under $root, and the scene's own camera (location, look_at, horizontal
# field of view in degrees), copied from the .pov so that the grid's centre view is the
# scene's picture.
scene_def() {
  case "$1" in
    woodbox) echo "advanced/woodbox.pov|<-5, 10, -15>|<0, 0, 0>|45" ;;
    pawns) echo "advanced/pawns.pov|<-8.0, 4.0, -14.0>|<-2.0, 0.0, -4.0>|40" ;;
    biscuit) echo "advanced/biscuit.pov|<20, 40, 28>|<0, 2, 0>|40" ;;
    desk) echo "advanced/desk/desk.pov|<0.0, 40.0, -150.0>|<0.0, 0.0, 0.0>|65" ;;
    drums) echo "advanced/drums2/drums.pov|<0.0, 3.0, -90.0>|<0.0, 8.0, 0.0>|28.0725" ;;
    *) return 1 ;;
  esac
}

mkdir -p "$cache"
for scene in $scenes; do
  def=$(scene_def "$scene") || { echo "lfrender.sh: unknown scene $scene (woodbox pawns biscuit desk drums)" >&2; exit 2; }
  IFS='|' read -r file loc look fov <<<"$def"
  dir="$cache/${scene}_${nu}x${nv}_${size}_d${disparity}_q${quality}"
  n=$((nu * nv))
  if [ -f "$dir/parameters.cfg" ] && [ "$(find "$dir" -name 'input_Cam*.png' | wc -l)" -eq "$n" ]; then
    echo "$dir"
    continue
  fi
  tmp="$dir.partial"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  # The baseline: focal length in pixels f = (size / 2) / tan(fov / 2); a point at distance
  # Z moves f * B / Z pixels between neighbouring views, so B = disparity * Z / f at the
  # look_at point.
  read -r baseline focal_px distance < <(python3 - "$loc" "$look" "$fov" "$size" "$disparity" <<'EOF'
import math, sys
loc, look = ([float(x) for x in a.strip("<> ").split(",")] for a in sys.argv[1:3])
fov, size, disparity = float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
z = math.dist(loc, look)
f = size / 2 / math.tan(math.radians(fov) / 2)
print(f"{disparity * z / f:.9g} {f:.9g} {z:.9g}")
EOF
)
  cat >"$tmp/camera.pov" <<EOF
// The scene, then a camera that replaces its own (POV-Ray uses the last camera declared):
// camera (row, column) of the grid, shifted along the centre camera's right and up vectors.
#include "$root/$file"
#declare LF_L = $loc;
#declare LF_A = $look;
#declare LF_D = vnormalize(LF_A - LF_L);
#declare LF_R = vnormalize(vcross(y, LF_D));
#declare LF_U = vcross(LF_D, LF_R);
#declare LF_O = $baseline * ((LF_COL - ($nv - 1) / 2) * LF_R - (LF_ROW - ($nu - 1) / 2) * LF_U);
camera {
  location LF_L + LF_O
  angle $fov
  right x * image_width / image_height
  look_at LF_A + LF_O
}
EOF
  start=$(date +%s)
  seq 0 $((n - 1)) | xargs -P "$jobs" -I{} sh -c '
    i=$1; r=$((i / '"$nv"')); c=$((i % '"$nv"'))
    povray +L"'"$root/$(dirname "$file")"'" +I"'"$tmp"'/camera.pov" +O"'"$tmp"'/input_Cam$(printf %03d "$i").png" \
      +W'"$size"' +H'"$size"' -D -V -GA +Q'"$quality"' -A +WT1 Declare=LF_ROW=$r Declare=LF_COL=$c >/dev/null 2>&1 ||
      { echo "lfrender.sh: povray failed on view $i of '"$scene"'" >&2; exit 255; }' _ {}
  seconds=$(( $(date +%s) - start ))
  # HCI's parameters.cfg keys where they apply; lengths in POV-Ray scene units.
  cat >"$tmp/parameters.cfg" <<EOF
[intrinsics]
image_resolution_x_px = $size
image_resolution_y_px = $size
focal_length_px = $focal_px
field_of_view_deg = $fov

[extrinsics]
num_cams_x = $nv
num_cams_y = $nu
baseline_units = $baseline
camera_location = $loc
look_at = $look
look_at_distance_units = $distance
optical_axes = parallel

[meta]
scene = $scene
source = povray-examples: $root/$file
renderer = $(povray --version 2>&1 | grep -m1 "^POV-Ray")
quality = +Q$quality -A
disparity_at_look_at_px = $disparity
render_seconds = $seconds
EOF
  rm -rf "$dir"
  mv "$tmp" "$dir"
  echo "$dir"
done
