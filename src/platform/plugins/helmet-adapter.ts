import type { IncomingMessage, ServerResponse } from 'node:http'
import helmet, { type HelmetOptions } from 'helmet'

/**
 * The headers helmet's middleware sets with these options, found once by running it on
 * a response that only records them (helmet 8.3.0, pinned): helmet computes its headers
 * from its options alone, but only its middleware gives them out, and running it per
 * request parses the options again each time. An API for them was asked for in
 * https://github.com/helmetjs/helmet/issues/430. test/conventions.test.ts ("are helmet's
 * for the docs page") fails if the middleware stops setting them on such a response.
 */
export function helmetHeaders(options: Readonly<HelmetOptions>): Record<string, string> {
  const headers: Record<string, string> = {}
  const recorder = {
    setHeader: (name: string, value: string) => {
      headers[name.toLowerCase()] = value
    },
    removeHeader: () => {},
  }
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, () => {})
  return headers
}
