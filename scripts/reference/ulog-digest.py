#!/usr/bin/env python3
"""
Reference digest of a PX4 ULog file as pyulog (the independent reader) reads it, for the TypeScript
reader's tests (cloud/src/imports/formats/ulog.test.ts).

Run (pyulog is not a project dependency; any checkout of PX4/pyulog at the commit below, with numpy):
    PYTHONPATH=/path/to/pyulog python3 scripts/reference/ulog-digest.py FILE.ulg \
        > cloud/src/imports/formats/testdata/NAME.pyulog.json

pyulog commit: 3cf17793f14709713ab297d3743314c658874068 (PX4/pyulog)

What it prints (JSON):
- topics: per (name, multi_id) the message count, a sha256 of the timestamps, and per field (pyulog's
  flattened names, `timestamp` excluded, padding included as pyulog keeps it) the pyulog type and a
  sha256 over the canonical texts of its values joined by "\n": integers in decimal, floats as the 16 hex
  digits of their IEEE-754 float64 big-endian bytes, NaN as "nan".
  pyulog gives a char[N] field as N int8 elements `name[0]`..`name[N-1]`; those stay in `fields`, and
  `char_arrays` adds what a reader that keeps the string would give: per message the bytes up to the
  first NUL decoded as UTF-8 (invalid bytes replaced), hashed the same way.
- initial_parameters, changed_parameters (timestamp, name, value) in file order; floats as in JSON.
- logged_messages (timestamp, level as pyulog keeps it: the ASCII digit's code, e.g. 54 for '6', text),
  logged_messages_tagged (tag, timestamp, level, text).
- info: pyulog's msg_info_dict; info_multiple: its msg_info_multiple_dict for string values (lists of
  lists of pieces), byte values as their total length.
- dropouts: how many 'O' messages, and their summed duration in ms.
- events: the `event` topic's messages (timestamp, id, sequence, log_levels, arguments as hex).
- gps_clock: per GPS topic (vehicle_gps_position, sensor_gps; multi_id 0) the messages with
  time_utc_usec > 0 and fix_type >= 3: how many, and the first (timestamp, time_utc_usec).
"""

import hashlib
import json
import math
import os
import struct
import sys

from pyulog import ULog

PYULOG_COMMIT = '3cf17793f14709713ab297d3743314c658874068'


def canonical(value):
    """ the text a value is hashed as: integers in decimal, floats as float64 big-endian hex """
    if isinstance(value, float) or type(value).__name__.startswith('float'):
        f = float(value)
        if math.isnan(f):
            return 'nan'
        return struct.pack('>d', f).hex()
    return str(int(value))


def digest(texts):
    return hashlib.sha256('\n'.join(texts).encode('utf-8')).hexdigest()


def json_number(value):
    """ a parameter or info number for JSON (NaN/inf have no JSON spelling) """
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


def topic_digest(data):
    count = len(data.data['timestamp'])
    fields = {}
    char_elements = {}  # base name -> [element names in order]
    for field in data.field_data:
        name = field.field_name
        if name == 'timestamp':
            continue
        values = data.data[name]
        fields[name] = {'type': field.type_str, 'sha256': digest(canonical(v) for v in values)}
        if field.type_str == 'char' and name.endswith(']'):
            base = name[:name.rindex('[')]
            char_elements.setdefault(base, []).append(name)

    char_arrays = {}
    for base, names in char_elements.items():
        texts = []
        for i in range(count):
            raw = bytes(int(data.data[n][i]) & 0xff for n in names)
            end = raw.find(b'\0')
            if end >= 0:
                raw = raw[:end]
            texts.append(raw.decode('utf-8', errors='replace'))
        char_arrays[base] = {'length': len(names), 'sha256': digest(texts)}

    return {
        'name': data.name,
        'multi_id': data.multi_id,
        'count': count,
        'timestamps': digest(canonical(v) for v in data.data['timestamp']),
        'fields': fields,
        'char_arrays': char_arrays,
    }


def main():
    path = sys.argv[1]
    ulog = ULog(path)

    info = {}
    for key, value in ulog.msg_info_dict.items():
        if isinstance(value, (bytes, bytearray)):
            info[key] = {'bytes': len(value)}
        else:
            info[key] = json_number(value)

    info_multiple = {}
    for key, value_sets in ulog.msg_info_multiple_dict.items():
        if value_sets and value_sets[0] and isinstance(value_sets[0][0], (bytes, bytearray)):
            info_multiple[key] = {'bytes': sum(len(piece) for pieces in value_sets for piece in pieces)}
        else:
            info_multiple[key] = value_sets

    events = []
    try:
        event = ulog.get_dataset('event')
        n_args = len([f for f in event.data if f.startswith('arguments[')])
        for i in range(len(event.data['timestamp'])):
            args = bytes(int(event.data['arguments[%d]' % k][i]) for k in range(n_args))
            events.append([int(event.data['timestamp'][i]), int(event.data['id'][i]),
                           int(event.data['event_sequence'][i]), int(event.data['log_levels'][i]),
                           args.hex()])
    except (KeyError, IndexError, ValueError):
        pass

    gps_clock = {}
    for data in ulog.data_list:
        if data.name in ('vehicle_gps_position', 'sensor_gps') and data.multi_id == 0:
            pairs = [(int(t), int(u)) for t, u, f in zip(data.data['timestamp'], data.data['time_utc_usec'],
                                                        data.data['fix_type']) if u > 0 and f >= 3]
            gps_clock[data.name] = {'count': len(pairs), 'first': list(pairs[0]) if pairs else None}

    tagged = []
    for tag, messages in ulog.logged_messages_tagged.items():
        for m in messages:
            tagged.append([tag, m.timestamp, m.log_level, m.message])

    out = {
        'file': os.path.basename(path),
        'pyulog_commit': PYULOG_COMMIT,
        'file_corruption': bool(ulog.file_corruption),
        'start_timestamp': ulog.start_timestamp,
        'topics': [topic_digest(d) for d in ulog.data_list],
        'initial_parameters': {k: json_number(v) for k, v in ulog.initial_parameters.items()},
        'changed_parameters': [[int(t), k, json_number(v)] for t, k, v in ulog.changed_parameters],
        'logged_messages': [[m.timestamp, m.log_level, m.message] for m in ulog.logged_messages],
        'logged_messages_tagged': tagged,
        'info': info,
        'info_multiple': info_multiple,
        'dropouts': {'count': len(ulog.dropouts), 'total_ms': sum(d.duration for d in ulog.dropouts)},
        'events': events,
        'gps_clock': gps_clock,
    }
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write('\n')


if __name__ == '__main__':
    main()
