// Preloaded (`node --import`) by walkthroughs.test.ts: an adapter README's first example runs as pasted, with
// its adapter's factory given `baseUrl` = a loopback sandbox's URL, so nothing reaches the live provider.
// RS_SANDBOXED = { "<package>": { "factory": "create…Adapter", "baseUrl": "http://127.0.0.1:…" } }.
// RS_SCRIPTED_TOOL_CALL = { "tool": "…", "input": { … } }: the AI SDK's generateText plays a model that makes this
// one tool call (after checking it was given a model), and answers with the tool's output as its text.
import { registerHooks } from 'node:module';

const sandboxed = JSON.parse(process.env.RS_SANDBOXED ?? '{}');
const scripted = process.env.RS_SCRIPTED_TOOL_CALL;
if (scripted) sandboxed.ai = { scripted };
const PREFIX = 'rs-sandboxed:';
registerHooks({
  resolve: (specifier, context, next) =>
    Object.hasOwn(sandboxed, specifier) && !context.parentURL?.startsWith(PREFIX)
      ? { url: `${PREFIX}${specifier}#${next(specifier, context).url}`, shortCircuit: true }
      : next(specifier, context),
  load(url, context, next) {
    if (!url.startsWith(PREFIX)) return next(url, context);
    const [specifier, real] = url.slice(PREFIX.length).split('#');
    const { factory, baseUrl } = sandboxed[specifier];
    const source = `import * as real from '${real}';
export * from '${real}';
${
  specifier === 'ai'
    ? `export async function generateText({ model, tools }) {
  if (!model) throw new TypeError('generateText: no model');
  const { tool, input } = ${scripted};
  return { text: JSON.stringify(await tools[tool].execute(input, { toolCallId: 'call_1', messages: [] })) };
}`
    : `export const ${factory} = (options) => real.${factory}({ ...options, baseUrl: '${baseUrl}' });`
}`;
    return { format: 'module', source, shortCircuit: true };
  },
});
