#!/usr/bin/env python3
"""
Reference digest of an ArduPilot DataFlash (.BIN) log as pymavlink's DFReader reads it: the independent reader
that cloud/src/imports/formats/dataflash.test.ts checks the TypeScript reader (dataflash.ts) against.

Run (pymavlink unpacked at /tmp/ref/pymavlink, /tmp/ref/pm/pymavlink a symlink to it):

    cd /tmp/ref/pymavlink && PYTHONPATH=/tmp/ref/pm MAVLINK_DIALECT=ardupilotmega \
      python3 /work/main/scripts/reference/dataflash-digest.py LOG.BIN > LOG.dfreader.json

pymavlink: `git archive` of the ArduPilot/pymavlink mirror at commit b4c7ca298cfac46aa841994d5d3288143e2fa7e5
(`git --git-dir=/work/.mirror/ArduPilot+pymavlink/repo rev-parse HEAD`), with mavlink/mavlink's
message_definitions; DFReader_binary with the legacy indexer (dfindexer is not built there).

The digest, in the order DFReader returns messages (recv_msg from the start of the file):

- `types`: one entry per message type as dataflash.ts announces them, in order of first appearance, keyed
  `NAME` for instance 0 or a type without an instance field and `NAME[n]` for instance n. A type has instances
  when its FMTU unit ids mark a column with '#' and that column is an integer (a string "instance", as NVF's
  Name, does not split the type: dataflash.ts keeps such messages as one type). Per type: `count`, `bootUs`
  (sha256 of the boot clock of each message, see below) and `fields` in column order without the boot clock
  column, each with DFReader's unit text (`fmt.get_unit`, the UNIT label with the MULT prefix) and `sha256`,
  a sha256 over the canonical texts of the field's values joined by "\n". Canonical text: integers in decimal;
  floats as the 16 hex digits of their IEEE-754 float64 big-endian bytes, NaN as "nan"; strings as DFReader
  gives them (decoded, cut at the first NUL). An 'a' column (int16[32]) is 32 fields `name[0]`..`name[31]`.
- `schema`: counts of FMT, FMTU, UNIT and MULT, which configure the reader and are not data.
- `params` [bootUs, name, value], `texts` (MSG) [bootUs, text], `events` (EV) [bootUs, id],
  `errors` (ERR) [bootUs, subsys, ecode], `versions` (VER fields), in order; floats as JSON numbers, NaN as "nan".
- `gpsClock`: the first GPS message of instance 0 with Status >= 3 and a week > 0, as
  {bootUs, unixUs}: unixUs = round(DFReaderClock._gpsTimeToTime(week, ms) * 1e6). null when there is none.

Boot clock (the rule dataflash.ts applies): a `TimeUS` column (µs); else a first column `TimeMS` (ms, old logs)
unless the type is GPS/GPS2 (TimeMS is GPS time of week there) or ACC*/GYR* (their own clock); else, for
GPS/GPS2, a `T` column (ms). That column is the boot clock and not a field. A message without one takes the
last boot time seen (0 before any; null in params/texts/events/errors before any).
"""

import hashlib
import json
import math
import os
import struct
import sys

from pymavlink import DFReader

PYMAVLINK_COMMIT = 'b4c7ca298cfac46aa841994d5d3288143e2fa7e5'
SCHEMA = ('FMT', 'FMTU', 'UNIT', 'MULT')
INTEGER_FORMATS = 'bBhHiIMqQ'


def boot_column(name, columns):
    '''(column, scale to µs) of the boot clock, or None'''
    if 'TimeUS' in columns:
        return ('TimeUS', 1)
    gps = name in ('GPS', 'GPS2')
    if columns and columns[0] == 'TimeMS' and not gps and not name.startswith('ACC') and not name.startswith('GYR'):
        return ('TimeMS', 1000)
    if gps and 'T' in columns:
        return ('T', 1000)
    return None


def canonical(v):
    if isinstance(v, bool):
        raise TypeError('unexpected bool')
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return 'nan' if math.isnan(v) else struct.pack('>d', v).hex()
    if isinstance(v, bytes):
        return DFReader.null_term(v)
    if isinstance(v, str):
        return v
    raise TypeError('unexpected value %r' % (v,))


def json_number(v):
    return 'nan' if isinstance(v, float) and math.isnan(v) else v


def main(path):
    log = DFReader.DFReader_binary(path)
    clock = DFReader.DFReaderClock()
    types = {}    # key -> {'count', 'boot': sha, 'fields': [(name, unit, sha)]}
    schema = {}
    params, texts, events, errors, versions = [], [], [], [], []
    gps_clock = None
    last_boot = None
    total = 0

    while True:
        m = log.recv_msg()
        if m is None:
            break
        total += 1
        fmt = m.fmt
        name = fmt.name
        columns = fmt.columns
        boot = boot_column(name, columns)
        if boot is not None:
            last_boot = int(getattr(m, boot[0])) * boot[1]
        boot_us = last_boot
        if name in SCHEMA:
            schema[name] = schema.get(name, 0) + 1
            continue

        instance = 0
        if fmt.instance_field is not None and fmt.format[columns.index(fmt.instance_field)] in INTEGER_FORMATS:
            instance = int(getattr(m, fmt.instance_field))
        key = name if instance == 0 else '%s[%d]' % (name, instance)

        entry = types.get(key)
        if entry is None:
            fields = []
            for i, col in enumerate(columns):
                if boot is not None and col == boot[0]:
                    continue
                unit = fmt.get_unit(col)
                if fmt.format[i] == 'a':
                    fields.extend(('%s[%d]' % (col, k), unit, col, k) for k in range(32))
                else:
                    fields.append((col, unit, col, None))
            entry = {'count': 0, 'boot': hashlib.sha256(), 'fields': [(f, u, c, k, hashlib.sha256()) for (f, u, c, k) in fields]}
            types[key] = entry
        sep = b'\n' if entry['count'] > 0 else b''
        entry['count'] += 1
        entry['boot'].update(sep + str(boot_us or 0).encode())
        for (_f, _u, col, k, h) in entry['fields']:
            v = getattr(m, col)
            if k is not None:
                v = v[k]
            h.update(sep + canonical(v).encode('utf-8'))

        if name == 'PARM':
            params.append([boot_us, m.Name, json_number(m.Value)])
        elif name == 'MSG':
            texts.append([boot_us, m.Message])
        elif name == 'EV':
            events.append([boot_us, m.Id])
        elif name == 'ERR':
            errors.append([boot_us, m.Subsys, m.ECode])
        elif name == 'VER':
            versions.append({c: json_number(getattr(m, c)) for c in columns if c != 'TimeUS'})
        elif name == 'GPS' and instance == 0 and gps_clock is None:
            week = getattr(m, 'GWk', None)
            ms = getattr(m, 'GMS', None)
            if week is None:  # old logs: Week, and TimeMS as the time of week
                week = getattr(m, 'Week', None)
                ms = getattr(m, 'TimeMS', None)
            if week is not None and ms is not None and m.Status >= 3 and week > 0:
                gps_clock = {'bootUs': boot_us, 'unixUs': int(round(clock._gpsTimeToTime(week, ms) * 1e6))}

    out = {
        'file': os.path.basename(path),
        'pymavlink': PYMAVLINK_COMMIT,
        'messages': total,
        'schema': schema,
        'types': {
            key: {
                'count': e['count'],
                'bootUs': e['boot'].hexdigest(),
                'fields': [{'name': f, 'unit': u, 'sha256': h.hexdigest()} for (f, u, _c, _k, h) in e['fields']],
            }
            for key, e in types.items()
        },
        'params': params,
        'texts': texts,
        'events': events,
        'errors': errors,
        'versions': versions,
        'gpsClock': gps_clock,
    }
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write('\n')


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit('usage: dataflash-digest.py LOG.BIN > LOG.dfreader.json')
    main(sys.argv[1])
