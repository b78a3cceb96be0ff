import { readFileSync } from 'node:fs';
import { defineCommand } from '../../command.js';
import { UsageError } from '../../errors.js';

/** Documents shipped in the package (copied there from docs/ at build) that `retrysafe help <topic>` prints. */
const TOPICS: Readonly<Record<string, string>> = { runbook: 'runbook.md' };

export const help = defineCommand({
  name: 'help',
  description: `help for a command (retrysafe help ledger resolve), or a topic: ${Object.keys(TOPICS).join(', ')}`,
  arguments: [['[command...]', 'a command, or a topic']],
  options: { json: { description: 'print { topic, text } or { command, text } as JSON' } },
  async run({ help: helpOf, print }, o, [words]: [string[]]) {
    const topic = words.length === 1 ? TOPICS[words[0]!] : undefined;
    if (topic) {
      const text = readFileSync(new URL(`../../${topic}`, import.meta.url), 'utf8');
      return print(o, { topic: words[0], text }, () => text);
    }
    const text = helpOf(words);
    if (text === undefined)
      throw new UsageError(`no command or topic '${words.join(' ')}' (topics: ${Object.keys(TOPICS).join(', ')})`);
    return print(o, { command: words.join(' '), text }, () => text);
  },
});
