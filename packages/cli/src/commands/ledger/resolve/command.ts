import { defineCommand, EXIT, type Options, type Parsed } from '../../../command.js';
import { TARGET_OPTIONS } from '../target.js';
import { ledgerResolve, resolveText } from './index.js';

const options = {
  ...TARGET_OPTIONS,
  resume: { description: 're-send with the SAME provider key through the adapter named in --config' },
  markDone: {
    argument: '<providerRef>',
    description: 'you verified the effect at the provider: record its reference',
  },
  abandon: { description: 'give the operation up (nothing more is sent)' },
  resendWith: {
    argument: '<params.json>',
    description:
      'send corrected params (same intent) as a new revision; only when every attempt is known not applied (needs --config)',
  },
  force: {
    description: 'with --resume: resume even though the packet marks it not safe (you checked at the provider)',
  },
  by: { argument: '<name>', description: 'who resolved it, for the receipt (default $USER)' },
} as const satisfies Options;

export type ResolveOptions = Parsed<typeof options>;

export const ledgerResolveCommand = defineCommand({
  name: 'ledger resolve',
  description: 'resolve a handed-off operation: --resume (same provider key), --mark-done <providerRef>, or --abandon',
  arguments: [['<id>', 'business-operation id']],
  options,
  async run({ io, json, color }, o, [id]: [string]) {
    const r = await ledgerResolve(o, id);
    if (o.json) json(r);
    else io.out(resolveText(r, color));
    return r.status === 'resolved' || r.status === 'done' ? EXIT.ok : EXIT.failed;
  },
});
