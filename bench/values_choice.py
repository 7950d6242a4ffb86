"""Which library carries dsh's immutable typed values: the measurement behind the choice.

Usage::

    python bench/values_choice.py            # medians of 9 rounds, one table
    python bench/values_choice.py --rounds 3

Three candidates model the same two session events (an ``assistant/chunk`` carrying a
text delta, the hottest line in a log, and a ``tool/result`` carrying a content list)
as immutable typed values with a tagged union on ``type``:

* ``msgspec``: frozen ``Struct`` classes, ``tag_field``, validated ``msgspec.json`` decode;
* ``pydantic``: frozen ``BaseModel`` classes behind a discriminated ``TypeAdapter``;
* ``dataclass``: frozen, slotted dataclasses built from ``json.loads`` by hand-written
  checks (what the standard library alone offers).

For each it times, per value, in CPU time: decoding one JSONL line into a validated
value, encoding a value back to its line, building a value in code, and reading one
nested field; and it measures the memory a value holds. Nothing here is imported by
dsh; ``docs/architecture.md`` cites its figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Annotated, Any, Literal

import msgspec
import pydantic
from pydantic.alias_generators import to_camel

CHUNK_LINE = (
    b'{"type":"assistant/chunk","seq":41,"time":1733000000123,'
    b'"data":{"turn":3,"step":2,"chunk":{"type":"text-delta","index":0,"text":"Hello, world"}}}'
)
RESULT_LINE = (
    b'{"type":"tool/result","seq":42,"time":1733000000456,"data":{"turn":3,"step":2,"callId":"call_1",'
    b'"content":[{"type":"text","text":"file.txt\\nother.txt\\n"}],"isError":false}}'
)
LINES = [CHUNK_LINE, RESULT_LINE]


# --- msgspec -------------------------------------------------------------------------------------


class MText(msgspec.Struct, frozen=True, tag_field="type", tag="text"):
    text: str


class MImage(msgspec.Struct, frozen=True, tag_field="type", tag="image"):
    url: str


class MTextDelta(msgspec.Struct, frozen=True, tag_field="type", tag="text-delta"):
    index: int
    text: str


class MBlockEnd(msgspec.Struct, frozen=True, tag_field="type", tag="block-end"):
    index: int
    block: MText | MImage


class MChunkData(msgspec.Struct, frozen=True):
    turn: int
    step: int
    chunk: MTextDelta | MBlockEnd


class MResultData(msgspec.Struct, frozen=True, rename="camel"):
    turn: int
    step: int
    call_id: str
    content: tuple[MText | MImage, ...]
    is_error: bool


class MChunkEvent(msgspec.Struct, frozen=True, tag_field="type", tag="assistant/chunk"):
    seq: int
    time: int
    data: MChunkData


class MResultEvent(msgspec.Struct, frozen=True, tag_field="type", tag="tool/result"):
    seq: int
    time: int
    data: MResultData


M_DECODER = msgspec.json.Decoder(MChunkEvent | MResultEvent)
M_ENCODER = msgspec.json.Encoder()


def m_build() -> object:
    return MChunkEvent(seq=41, time=1733000000123, data=MChunkData(turn=3, step=2, chunk=MTextDelta(0, "Hello")))


# --- pydantic ------------------------------------------------------------------------------------

FROZEN = pydantic.ConfigDict(frozen=True, populate_by_name=True)


class PText(pydantic.BaseModel):
    model_config = FROZEN
    type: Literal["text"]
    text: str


class PImage(pydantic.BaseModel):
    model_config = FROZEN
    type: Literal["image"]
    url: str


PBlock = Annotated[PText | PImage, pydantic.Field(discriminator="type")]


class PTextDelta(pydantic.BaseModel):
    model_config = FROZEN
    type: Literal["text-delta"]
    index: int
    text: str


class PBlockEnd(pydantic.BaseModel):
    model_config = FROZEN
    type: Literal["block-end"]
    index: int
    block: PBlock


class PChunkData(pydantic.BaseModel):
    model_config = FROZEN
    turn: int
    step: int
    chunk: Annotated[PTextDelta | PBlockEnd, pydantic.Field(discriminator="type")]


class PResultData(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, populate_by_name=True, alias_generator=to_camel)
    turn: int
    step: int
    call_id: str
    content: tuple[PBlock, ...]
    is_error: bool


class PChunkEvent(pydantic.BaseModel):
    model_config = FROZEN
    type: Literal["assistant/chunk"]
    seq: int
    time: int
    data: PChunkData


class PResultEvent(pydantic.BaseModel):
    model_config = FROZEN
    type: Literal["tool/result"]
    seq: int
    time: int
    data: PResultData


P_ADAPTER: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(
    Annotated[PChunkEvent | PResultEvent, pydantic.Field(discriminator="type")]
)


def p_encode(value: Any) -> bytes:
    return P_ADAPTER.dump_json(value, by_alias=True)


def p_build() -> object:
    chunk = PTextDelta(type="text-delta", index=0, text="Hello")
    return PChunkEvent(type="assistant/chunk", seq=41, time=1733000000123, data=PChunkData(turn=3, step=2, chunk=chunk))


# --- frozen dataclasses --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class DText:
    text: str
    type: str = "text"


@dataclasses.dataclass(frozen=True, slots=True)
class DTextDelta:
    index: int
    text: str
    type: str = "text-delta"


@dataclasses.dataclass(frozen=True, slots=True)
class DChunkData:
    turn: int
    step: int
    chunk: DTextDelta


@dataclasses.dataclass(frozen=True, slots=True)
class DResultData:
    turn: int
    step: int
    call_id: str
    content: tuple[DText, ...]
    is_error: bool


@dataclasses.dataclass(frozen=True, slots=True)
class DEvent:
    type: str
    seq: int
    time: int
    data: DChunkData | DResultData


def _int(value: object) -> int:
    if type(value) is not int:
        raise ValueError("expected an integer")
    return value


def _str(value: object) -> str:
    if type(value) is not str:
        raise ValueError("expected a string")
    return value


def d_decode(line: bytes) -> DEvent:
    raw = json.loads(line)
    data = raw["data"]
    kind = _str(raw["type"])
    payload: DChunkData | DResultData
    if kind == "assistant/chunk":
        chunk = data["chunk"]
        if chunk["type"] != "text-delta":
            raise ValueError("unknown chunk")
        payload = DChunkData(
            _int(data["turn"]), _int(data["step"]), DTextDelta(_int(chunk["index"]), _str(chunk["text"]))
        )
    else:
        blocks = tuple(DText(_str(block["text"])) for block in data["content"])
        payload = DResultData(
            _int(data["turn"]), _int(data["step"]), _str(data["callId"]), blocks, bool(data["isError"])
        )
    return DEvent(kind, _int(raw["seq"]), _int(raw["time"]), payload)


def _d_plain(value: object) -> object:
    if isinstance(value, DChunkData):
        return {"turn": value.turn, "step": value.step, "chunk": _d_plain(value.chunk)}
    if isinstance(value, DTextDelta):
        return {"type": value.type, "index": value.index, "text": value.text}
    if isinstance(value, DText):
        return {"type": value.type, "text": value.text}
    if isinstance(value, DResultData):
        content = [_d_plain(block) for block in value.content]
        return {
            "turn": value.turn,
            "step": value.step,
            "callId": value.call_id,
            "content": content,
            "isError": value.is_error,
        }
    raise TypeError(value)


def d_encode(value: DEvent) -> bytes:
    body = {"type": value.type, "seq": value.seq, "time": value.time, "data": _d_plain(value.data)}
    return json.dumps(body, separators=(",", ":")).encode()


def d_build() -> object:
    return DEvent("assistant/chunk", 41, 1733000000123, DChunkData(3, 2, DTextDelta(0, "Hello")))


# --- measurement ---------------------------------------------------------------------------------


def per_call_us(fn: Callable[[], object], calls: int) -> float:
    gc.collect()
    start = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - start) / calls * 1e6


def retained_bytes(decode: Callable[[bytes], object], count: int) -> float:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = [decode(CHUNK_LINE) for _ in range(count)]
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del kept
    return (after - before) / count


def candidates() -> dict[str, dict[str, Callable[[], object]]]:
    m_values = [M_DECODER.decode(line) for line in LINES]
    p_values = [P_ADAPTER.validate_json(line) for line in LINES]
    d_values = [d_decode(line) for line in LINES]
    assert [json.loads(M_ENCODER.encode(v)) for v in m_values] == [json.loads(line) for line in LINES]
    assert [json.loads(p_encode(v)) for v in p_values] == [json.loads(line) for line in LINES]
    assert [json.loads(d_encode(v)) for v in d_values] == [json.loads(line) for line in LINES]
    return {
        "msgspec": {
            "decode": lambda: [M_DECODER.decode(line) for line in LINES],
            "encode": lambda: [M_ENCODER.encode(v) for v in m_values],
            "build": m_build,
            "read": lambda: m_values[1].data.content[0].text,  # type: ignore[attr-defined]
        },
        "pydantic": {
            "decode": lambda: [P_ADAPTER.validate_json(line) for line in LINES],
            "encode": lambda: [p_encode(v) for v in p_values],
            "build": p_build,
            "read": lambda: p_values[1].data.content[0].text,
        },
        "dataclass": {
            "decode": lambda: [d_decode(line) for line in LINES],
            "encode": lambda: [d_encode(v) for v in d_values],
            "build": d_build,
            "read": lambda: d_values[1].data.content[0].text,  # type: ignore[union-attr]
        },
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args(argv)
    table = candidates()
    decoders: dict[str, Callable[[bytes], object]] = {
        "msgspec": M_DECODER.decode,
        "pydantic": P_ADAPTER.validate_json,
        "dataclass": d_decode,
    }
    print(f"python {sys.version.split()[0]}, msgspec {msgspec.__version__}, pydantic {pydantic.VERSION}")
    print(f"{'library':<10} {'decode/line':>12} {'encode/line':>12} {'build':>9} {'read':>8} {'bytes/value':>12}")
    for library, jobs in table.items():
        medians: dict[str, float] = {}
        for job, fn in jobs.items():
            per_line = 2 if job in ("decode", "encode") else 1
            samples = [per_call_us(fn, args.calls) / per_line for _ in range(args.rounds)]
            medians[job] = statistics.median(samples)
        size = retained_bytes(decoders[library], 10_000)
        print(
            f"{library:<10} {medians['decode']:>10.2f}us {medians['encode']:>10.2f}us "
            f"{medians['build']:>7.2f}us {medians['read'] * 1000:>6.0f}ns {size:>12.0f}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
