/** Small pure helpers for the webview's HTML (no `vscode` import). */

/** Text made safe inside HTML elements and attribute values. */
export function escapeHtml(text: unknown): string {
  return String(text)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const MEDIA_TYPES: Record<string, string> = { svg: 'image/svg+xml', png: 'image/png' };

/** A picture file's bytes as a `data:` URI (the panel's CSP allows `img-src data:`). */
export function pictureDataUri(fileName: string, bytes: Uint8Array): string {
  const ext = fileName.slice(fileName.lastIndexOf('.') + 1).toLowerCase();
  const type = MEDIA_TYPES[ext] ?? 'application/octet-stream';
  return `data:${type};base64,${Buffer.from(bytes).toString('base64')}`;
}

/** The file name of a path (either separator). */
export function baseName(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}
