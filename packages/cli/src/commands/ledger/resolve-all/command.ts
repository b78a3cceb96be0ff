import { defineCommand, EXIT, type Options, type Parsed } from '../../../command.js';
import { TARGET_OPTIONS } from '../target.js';
import { ledgerResolveAll, resolveAllText } from './index.js';

const options = {
  ...TARGET_OPTIONS,
  operation: {
    argument: '<name>',
    parse: 'list',
    description: 'only this operation, e.g. stripe.invoices.create',
  },
  reason: {
    argument: '<reason>',
    parse: 'list',
    description: 'only this handoff reason, e.g. rejected',
  },
  id: {
    argument: '<id>',
    parse: 'list',
    description: 'only these business-operation ids',
  },
  resume: { description: 're-send each with the SAME provider key through the adapters named in --config' },
  abandon: { description: 'give each up (nothing more is sent)' },
  force: { description: 'also where the packet marks the action not safe (you checked at the provider)' },
  dryRun: { description: 'list what would be done; send and write nothing' },
  by: { argument: '<name>', description: 'who resolved them, for the receipts (default $USER)' },
} as const satisfies Options;

export type ResolveAllOptions = Parsed<typeof options>;

export const ledgerResolveAllCommand = defineCommand({
  name: 'ledger resolve-all',
  description:
    'resolve every handed-off operation matching the filters (--resume or --abandon); --dry-run shows what would be done',
  options,
  async run({ io, json, color }, o) {
    const r = await ledgerResolveAll(o);
    if (o.json) json(r);
    else io.out(resolveAllText(r, color));
    return r.ok ? EXIT.ok : EXIT.failed;
  },
});
