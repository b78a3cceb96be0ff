import { defineCommand, EXIT } from '../../../command.js';
import { ledgerResolve, RESOLVE_OPTIONS, resolveText } from './index.js';

export const ledgerResolveCommand = defineCommand({
  name: 'ledger resolve',
  description: 'resolve a handed-off operation: --resume (same provider key), --mark-done <providerRef>, or --abandon',
  arguments: [['<id>', 'business-operation id']],
  options: RESOLVE_OPTIONS,
  async run({ io, json, color }, o, [id]: [string]) {
    const r = await ledgerResolve(o, id);
    if (o.json) json(r);
    else io.out(resolveText(r, color));
    return r.status === 'resolved' || r.status === 'done' ? EXIT.ok : EXIT.failed;
  },
});
