import { defineCommand, EXIT } from '../../../command.js';
import { ledgerResolveAll, RESOLVE_ALL_OPTIONS, resolveAllText } from './index.js';

export const ledgerResolveAllCommand = defineCommand({
  name: 'ledger resolve-all',
  description:
    'resolve every handed-off operation matching the filters (--resume or --abandon); --dry-run shows what would be done',
  options: RESOLVE_ALL_OPTIONS,
  async run({ io, json, color }, o) {
    const r = await ledgerResolveAll(o);
    if (o.json) json(r);
    else io.out(resolveAllText(r, color));
    return r.ok ? EXIT.ok : EXIT.failed;
  },
});
