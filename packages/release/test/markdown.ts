/** The fenced block that follows `<!-- name -->` in a markdown page. */
export function blockAfter(markdown: string, name: string): string {
  const at = markdown.indexOf(`<!-- ${name} -->`);
  if (at < 0) throw new Error(`no <!-- ${name} --> marker`);
  const m = /```[^\n]*\n([\s\S]*?)```/.exec(markdown.slice(at));
  if (!m) throw new Error(`no code block after <!-- ${name} -->`);
  return m[1]!;
}
