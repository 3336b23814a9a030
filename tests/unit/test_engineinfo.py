"""The engine's description (engine/engineinfo.py): typed fields for what measure reads,
and the very JSON the engine gave for a run's meta.json."""

from __future__ import annotations

from openssl_matrix.engine.backend import endpoint_is_local
from openssl_matrix.engine.engineinfo import EngineInfo
from openssl_matrix.engine.hostlock import engine_key

#: DockerBackend.engine_info()'s keys, as a local engine answers (values from this
#: project's machine; a key the engine left out is null)
LOCAL = {"endpoint": "unix:///var/run/docker.sock", "endpoint_spec": None,
         "transport": "unix", "context": None, "id": "ABCD:EFGH", "name": "host-1",
         "root_dir": "/var/lib/docker", "server_version": "20.10.24",
         "api_version": "1.41", "os": "Debian GNU/Linux 12 (bookworm)",
         "kernel": "6.1.0-18-amd64", "arch": "x86_64", "os_type": "linux", "ncpu": 2,
         "mem_total": 8331264000, "storage_driver": "overlay2"}


def test_a_description_is_typed_and_writes_back_as_given() -> None:
    info = EngineInfo.from_json(LOCAL)
    assert info.id == "ABCD:EFGH" and info.ncpu == 2 and info.kernel == "6.1.0-18-amd64"
    assert info.to_json() == LOCAL  # nulls kept: the keys the engine gave
    assert endpoint_is_local(info) and engine_key(info) == "ABCD_EFGH"
    assert dict(info) == LOCAL and info.get("storage_driver") == "overlay2"


def test_a_partial_or_odd_description_keeps_what_it_was_given() -> None:
    odd = {"endpoint": "tcp://lab:2376", "ncpu": "2", "labels": ["x"]}
    info = EngineInfo.from_json(odd)
    assert info.ncpu is None and info.endpoint == "tcp://lab:2376"  # "2": not guessed
    assert info.to_json() == odd and not endpoint_is_local(info)
    assert engine_key(info) == "tcp_lab_2376"


def test_one_made_in_python_writes_what_it_names() -> None:
    assert EngineInfo().to_json() == {} and not EngineInfo()
    info = EngineInfo(endpoint="local", id="X")
    assert info.to_json() == {"endpoint": "local", "id": "X"}
    assert EngineInfo.of(info) is info and EngineInfo.of({"id": "X"}).id == "X"
