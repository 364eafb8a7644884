"""Writes the demo photos of this folder from scikit-image's sample data (pip install
scikit-image). Sources and licences: LICENSES.md."""
import skimage.data as data
from PIL import Image

# name, skimage function, size to write (None: as is), format
PHOTOS = [
    ("astronaut", data.astronaut, None, "JPEG"),
    ("chelsea", data.chelsea, None, "JPEG"),
    ("coffee", data.coffee, None, "JPEG"),
    ("rocket", data.rocket, (480, 320), "JPEG"),
    ("hubble", data.hubble_deep_field, (500, 436), "JPEG"),
    ("retina", data.retina, (400, 400), "JPEG"),
    ("camera", data.camera, (384, 384), "PNG"),
]

for name, load, size, fmt in PHOTOS:
    image = Image.fromarray(load())
    if size:
        image = image.resize(size, Image.LANCZOS)
    if fmt == "JPEG":
        image.save(f"{name}.jpg", quality=88, optimize=True)
    else:
        image.save(f"{name}.png", optimize=True)
