#!/usr/bin/env python3
"""
Reference texts of a PX4 ULog file's events as pyulog renders them, for the TypeScript event renderer's
tests (cloud/src/imports/formats/px4-events.test.ts).

Run (pyulog and libevents are not project dependencies; checkouts at the commits below, here in /tmp/ref,
and numpy, which pyulog needs):
    PYTHONPATH=/tmp/ref/pyulog:/tmp/ref/libevents/libs/python \
        python3 scripts/reference/px4-events-texts.py /work/shared/fixtures/ulog/sample_px4_events.ulg \
        > cloud/src/imports/formats/testdata/sample_px4_events.events.json

pyulog commit: 3cf17793f14709713ab297d3743314c658874068 (PX4/pyulog)
libevents commit: 59f7f5c0ec2e76fadbc1dc40cc0705d614472edc (mavlink/libevents, the submodule pyulog pins
at that commit; pyulog's `pyulog/libevents_parse` is a symlink into it). A recursive clone of pyulog has
it in place; otherwise put a checkout of libevents on PYTHONPATH as above and this script makes pyulog
use it.

What it prints (JSON): `events`, one entry per message of the `event` topic in file order, rendered by
the parser pyulog's PX4Events builds from the log's own `metadata_events` (profile "dev", no URL or
parameter formatting, no escaping: plain text):
- timestamp, id, sequence, log_levels (the raw byte), arguments (the 25 bytes as hex);
- level: the internal log level, (log_levels >> 4) & 0xF, as PX4Events uses it;
- name, group, text (ParsedEvent.message()), or all three null for an id the metadata does not define;
- shown: whether PX4Events.get_logged_events lists it (level below 8 and group "default").
The script checks that the shown entries are exactly what get_logged_events returns, so the texts here
are pyulog's own and not a re-implementation of its loop.

The log's events use few of the message features, so `catalog` renders every event the metadata
defines, with several argument patterns, through the same parser: [id, arguments as hex, name, text],
text null where libevents raises (e.g. a precision applied to an enum's name). Events with arguments get
all-zero, ascending and two pseudo-random byte patterns (floats of every size, NaN, infinity, unknown
enum values and bits) and two typed ones, built from the argument types (valid enum values and bit
combinations, floats that round at a half, tiny and huge floats, negative integers); events without
arguments get one line.

`numbers` checks the number formatting alone, which PX4's messages barely exercise (no float without a
precision): one made-up event with a float32, an int64 and a uint64 argument and the message in
NUMBERS_MESSAGE, rendered for edge values (zeros, ties, subnormals, limits, NaN, infinities) and
pseudo-random bit patterns: [arguments as hex, text].
"""

import json
import random
import struct
import sys

try:
    import pyulog.libevents_parse.parser  # noqa: F401  (present in a recursive clone)
except ImportError:
    # pyulog/libevents_parse is a dangling symlink without the submodule: use libevents from PYTHONPATH.
    import libevents_parse
    import libevents_parse.parser
    sys.modules['pyulog.libevents_parse'] = libevents_parse
    sys.modules['pyulog.libevents_parse.parser'] = libevents_parse.parser

from pyulog import ULog
from pyulog.px4_events import PX4Events
from pyulog.libevents_parse.parser import Parser

PYULOG_COMMIT = '3cf17793f14709713ab297d3743314c658874068'
LIBEVENTS_COMMIT = '59f7f5c0ec2e76fadbc1dc40cc0705d614472edc'

LEVEL_NAMES = {0: 'EMERGENCY', 1: 'ALERT', 2: 'CRITICAL', 3: 'ERROR', 4: 'WARNING', 5: 'NOTICE',
               6: 'INFO', 7: 'DEBUG', 8: 'PROTOCOL', 9: 'DISABLED'}


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: px4-events-texts.py FILE.ulg')
    path = sys.argv[1]
    ulog = ULog(path)

    px4_events = PX4Events()
    # Only the log's own definitions: never download PX4's default ones.
    px4_events.set_default_json_definitions_cb(lambda _already: None)
    parser = px4_events._get_event_parser(ulog)  # pylint: disable=protected-access
    if parser is None:
        sys.exit('the log has no metadata_events (or no metadata_events_sha256)')

    data = ulog.get_dataset('event').data
    num_args = sum(1 for key in data if key.startswith('arguments['))
    events = []
    for i, event_id in enumerate(data['id']):
        args = bytes(int(data['arguments[{}]'.format(j)][i]) for j in range(num_args))
        level = (int(data['log_levels'][i]) >> 4) & 0xF
        parsed = parser.parse(int(event_id), args)
        events.append({
            'timestamp': int(data['timestamp'][i]),
            'id': int(event_id),
            'sequence': int(data['event_sequence'][i]),
            'log_levels': int(data['log_levels'][i]),
            'arguments': args.hex(),
            'level': level,
            'name': parsed.name() if parsed else None,
            'group': parsed.group() if parsed else None,
            'text': parsed.message() if parsed else None,
            'shown': level < 8 and (parsed is None or parsed.group() == 'default'),
        })

    # pyulog's own list: (timestamp, level name, message), unknown ids as "[Unknown event with ID n]".
    logged = px4_events.get_logged_events(ulog)
    expected = [(e['timestamp'], LEVEL_NAMES[e['level']],
                 e['text'] if e['text'] is not None else '[Unknown event with ID {:}]'.format(e['id']))
                for e in events if e['shown']]
    if [(int(t), level, text) for t, level, text in logged] != expected:
        sys.exit('the rendered events differ from PX4Events.get_logged_events')

    catalog = catalog_texts(parser)
    numbers = number_texts()

    # One catalog entry per line keeps the file readable and its diffs small.
    head = {
        'file': path.rsplit('/', 1)[-1],
        'pyulog_commit': PYULOG_COMMIT,
        'libevents_commit': LIBEVENTS_COMMIT,
        'events': events,
    }
    text = json.dumps(head, indent=1, ensure_ascii=False)
    def one_per_line(entries):
        return ',\n'.join('  ' + json.dumps(entry, ensure_ascii=False) for entry in entries)
    sys.stdout.write(text[:-2] + ',\n "catalog": [\n' + one_per_line(catalog) + '\n ],\n'
                     + ' "numbers_message": ' + json.dumps(NUMBERS_MESSAGE) + ',\n'
                     + ' "numbers": [\n' + one_per_line(numbers) + '\n ]\n}\n')


INT_FORMATS = {'uint8_t': '<B', 'int8_t': '<b', 'uint16_t': '<H', 'int16_t': '<h', 'uint32_t': '<I',
               'int32_t': '<i', 'uint64_t': '<Q', 'int64_t': '<q'}
TYPED_FLOATS = [[2.5, 0.125, -0.04, 1234.5678, 1e-5, 3e16, 491.25, -0.0],
                [0.5, 1.5, -2.5, 100.0, 1.0e-7, float('inf'), float('nan'), 0.30000001192092896]]
TYPED_INTS = [[3, -1, 1000, 7], [0, 200, -32768, 42]]


def typed_arguments(parser, namespace, arguments, variant):
    """ Bytes for an event's arguments from their types: valid enum entries, chosen floats and ints. """
    out = b''
    for i, arg in enumerate(arguments):
        arg_type = arg['type']
        if arg_type == 'float':
            out += struct.pack('<f', TYPED_FLOATS[variant][i % len(TYPED_FLOATS[variant])])
            continue
        if arg_type in INT_FORMATS:
            fmt = INT_FORMATS[arg_type]
            value = TYPED_INTS[variant][i % len(TYPED_INTS[variant])]
            if fmt[1].isupper():
                value &= (1 << (8 * struct.calcsize(fmt))) - 1
            else:
                limit = 1 << (8 * struct.calcsize(fmt) - 1)
                value = max(-limit, min(limit - 1, value))
            out += struct.pack(fmt, value)
            continue
        enum_name = arg_type if '::' in arg_type else namespace + '::' + arg_type
        enum = parser._enums[enum_name]  # pylint: disable=protected-access
        values = [int(key) for key in enum['entries']]
        if enum.get('is_bitfield', False):
            value = (values[0] | values[-1]) if variant == 0 else values[len(values) // 2]
        else:
            value = values[len(values) // 2] if variant == 0 else values[-1]
        out += struct.pack(INT_FORMATS[enum['type']], value)
    return out + bytes(25 - len(out))


NUMBERS_MESSAGE = '{1}|{1:.0}|{1:.1}|{1:.2}|{1:.3}|{1:.8}|{2}|{2:.1}|{3}|{3:.2}'


def number_texts():
    """ The made-up number event rendered for edge and pseudo-random values (see the header). """
    parser = Parser()
    parser.load_definitions({'version': 2, 'components': {'1': {'namespace': 'test', 'event_groups': {
        'default': {'events': {'1': {'name': 'numbers', 'message': NUMBERS_MESSAGE, 'arguments': [
            {'type': 'float', 'name': 'a'}, {'type': 'int64_t', 'name': 'b'},
            {'type': 'uint64_t', 'name': 'c'}]}}}}}}})
    edge_floats = [0.0, -0.0, 0.5, 1.5, 2.5, -2.5, 0.125, 0.375, 1e-4, 1e-5, 9.5e-5, 123456789.0, 1e16,
                   3e16, 1.0e38, 3.4028234663852886e38, 1.401298464324817e-45, 1.1754942106924411e-38,
                   float('inf'), float('-inf'), float('nan'), 0.1, 0.7, 1 / 3, 2 ** 24, 2 ** 24 + 2,
                   2 ** -11, 2 ** -14, 2 ** 53, 2 ** 54, -2 ** 60]
    edge_ints = [(0, 0), (-1, 2 ** 64 - 1), (2 ** 63 - 1, 2 ** 63), (-2 ** 63, 2 ** 53 + 1),
                 (2 ** 53 + 3, 12345678901234567890)]
    rng = random.Random(7)
    patterns = []
    for i, value in enumerate(edge_floats):
        signed, unsigned = edge_ints[i % len(edge_ints)]
        patterns.append(struct.pack('<fqQ', value, signed, unsigned))
    for _ in range(200):
        patterns.append(rng.randbytes(20))
    entries = []
    for args in patterns:
        args = args + bytes(25 - len(args))
        entries.append([args.hex(), parser.parse((1 << 24) | 1, args).message()])
    return entries


def catalog_texts(parser):
    """ Every defined event rendered with several argument patterns (see the header). """
    rng = random.Random(20240318)
    entries = []
    for comp_id in sorted(parser._events['components']):  # pylint: disable=protected-access
        comp = parser._events['components'][comp_id]  # pylint: disable=protected-access
        for group in comp.get('event_groups', {}).values():
            for sub_id in sorted(group.get('events', {})):
                event = group['events'][sub_id]
                event_id = (comp_id << 24) | sub_id
                arguments = event.get('arguments', [])
                patterns = [bytes(25)]
                if arguments:
                    patterns += [bytes(range(1, 26)), rng.randbytes(25), rng.randbytes(25),
                                 typed_arguments(parser, comp['namespace'], arguments, 0),
                                 typed_arguments(parser, comp['namespace'], arguments, 1)]
                for args in patterns:
                    parsed = parser.parse(event_id, args)
                    try:
                        text = parsed.message()
                    except ValueError:
                        text = None
                    entries.append([event_id, args.hex(), parsed.name(), text])
    return entries


if __name__ == '__main__':
    main()
