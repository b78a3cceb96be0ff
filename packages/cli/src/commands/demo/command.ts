import { defineCommand, EXIT } from '../../command.js';
import { demoCommand, demoSummary } from './index.js';

export const demo = defineCommand({
  name: 'demo',
  description:
    'a scripted agent flow (mail, CRM update, ticket, invoice, a bad charge) against the sandboxes with faults, on SQLite',
  options: {
    db: { argument: '<path>', description: 'SQLite ledger file (default: a new temp file)' },
    json: { description: 'print the report as JSON' },
  },
  async run({ io, json, color }, o) {
    const r = await demoCommand(o, o.json ? () => {} : (l) => io.out(l), color);
    if (o.json) json(r);
    else io.out(demoSummary(r, color));
    return r.ok ? EXIT.ok : EXIT.failed;
  },
});
