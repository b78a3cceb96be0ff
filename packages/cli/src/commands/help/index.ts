import { readFileSync } from 'node:fs';
import { UsageError } from '../../errors.js';

/** Topics `retrysafe help <topic>` prints besides the commands' help: documents shipped in the package. */
export const TOPICS: Readonly<Record<string, { readonly file: string; readonly description: string }>> = {
  runbook: { file: 'runbook.md', description: "the operator's runbook: finding, reading and resolving handoffs" },
};

/** The text of a topic, read from the package (copied there from docs/ at build). */
export function topicText(name: string): string {
  const topic = TOPICS[name];
  if (!topic) throw new UsageError(`no help topic '${name}' (topics: ${Object.keys(TOPICS).join(', ')})`);
  return readFileSync(new URL(`../../${topic.file}`, import.meta.url), 'utf8');
}
