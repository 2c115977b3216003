//! Tests of the ZFP codecs on their own (the wheel interop is in python/tests/test_zfp.py).
use super::*;

