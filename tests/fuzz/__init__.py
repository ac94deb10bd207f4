"""The fuzz targets, their harnesses and corpora, the findings they keep."""
