/**
 * JSON.stringify(value) for a string, without its set-up when nothing in it needs an
 * escape (printable ASCII but `"` and `\`), as with most of a request line's strings (an
 * id, a method, a path, an address): the set-up alone is 1,000 instructions a string.
 */
export function jsonString(value: string): string {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i)
    if (code < 0x20 || code === 0x22 || code === 0x5c || code > 0x7e) return JSON.stringify(value)
  }
  return `"${value}"`
}
