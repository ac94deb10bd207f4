"""wirecheck/reference_impl/core/options.py: a broker's settings checked by name before it is built."""
from dataclasses import dataclass

import pytest

from wirecheck.reference_impl.blipmq.broker import make_broker as make_blip
from wirecheck.reference_impl.core.options import UnknownOption, check_options
from wirecheck.reference_impl.micromessage2.broker import make_broker as make_mm2


@dataclass
class _Config:
    timeout: float = 1.0
    size: int = 2


def test_names_of_dataclasses_and_iterables_are_accepted():
    check_options("x", {"timeout": 3, "extra": 1}, _Config, {"extra"})
    check_options("x", {}, _Config)


def test_unknown_names_are_refused_sorted():
    with pytest.raises(UnknownOption) as info:
        check_options("x", {"zeta": 1, "alpha": 2, "size": 3}, _Config)
    assert info.value.names == ("alpha", "zeta") and info.value.protocol == "x"
    assert isinstance(info.value, ValueError)
    assert str(info.value) == "x broker: unknown option(s) alpha, zeta"


def test_a_misspelt_setting_is_matched_to_the_one_meant():
    with pytest.raises(UnknownOption) as info:
        check_options("x", {"timout": 1, "colour": 2}, _Config)
    assert info.value.near("timout") == "timeout"
    assert info.value.near("colour") is None            # nothing close: no guess


def test_a_broker_refuses_before_building_and_takes_known_settings():
    with pytest.raises(UnknownOption):
        make_blip(max_conections=5)
    assert make_blip(max_connections=5) is not None
    with pytest.raises(UnknownOption):
        make_mm2(handshake_timout=1.0)
    assert make_mm2(handshake_timeout=1.0) is not None
    with pytest.raises(UnknownOption) as info:              # a setting its signature names
        make_mm2(max_pendng=3)
    assert info.value.near("max_pendng") == "max_pending"
