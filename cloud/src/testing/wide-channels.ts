import type { ChannelRow } from '../db/schema.ts';

/** Channel rows of a wide dataset with one column per physical type, ch_0, ch_1, … in order (unit tests). */
export function wideChannelRows(physicalTypes: readonly string[]): ChannelRow[] {
  return physicalTypes.map((physical_type, i) => ({
    id: crypto.randomUUID(),
    organization_id: 'org',
    dataset_id: 'dataset',
    col_index: i,
    col_name: `ch_${i}`,
    name: `channel ${i}`,
    unit: '',
    data_type: 'double',
    physical_type,
    created_at: new Date(),
    updated_at: new Date(),
  }));
}
