"""``python -m oxblosc.hdf5``: print the directory to put on HDF5_PLUGIN_PATH."""

from . import PLUGIN_PATH

print(PLUGIN_PATH)
