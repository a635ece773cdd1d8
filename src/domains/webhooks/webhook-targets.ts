import { lookup as systemLookup } from 'node:dns/promises'
import { BlockList, isIP, type LookupFunction } from 'node:net'

/** Every address a host name resolves to, as getaddrinfo answers (tests stub it). */
export type ResolveHost = (hostname: string) => Promise<{ address: string; family: number }[]>

export const resolveWithSystem: ResolveHost = (hostname) =>
  systemLookup(hostname, { all: true, verbatim: true })

/**
 * The address ranges that are not the public internet, by what they are: IANA's
 * special-purpose registries (RFC 6890 and its updates), less nothing. A target in any
 * of them could reach this service's own network (SSRF); mapped and translated IPv6
 * forms of IPv4 addresses are refused whole rather than unwrapped.
 */
const NON_PUBLIC_RANGES: [kind: string, ranges: string[]][] = [
  ['unspecified', ['0.0.0.0/8', '::/128']],
  ['loopback', ['127.0.0.0/8', '::1/128']],
  ['private', ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16']],
  ['carrier-grade NAT', ['100.64.0.0/10']],
  ['link-local', ['169.254.0.0/16', 'fe80::/10']],
  ['unique-local', ['fc00::/7']],
  ['multicast', ['224.0.0.0/4', 'ff00::/8']],
  ['IPv4-mapped', ['::ffff:0:0/96', '64:ff9b::/96', '64:ff9b:1::/48', '2002::/16']],
  [
    'reserved',
    [
      '192.0.0.0/24',
      '192.0.2.0/24',
      '192.88.99.0/24',
      '198.18.0.0/15',
      '198.51.100.0/24',
      '203.0.113.0/24',
      '240.0.0.0/4',
      '100::/64',
      '2001::/23',
      '2001:db8::/32',
      '3fff::/20',
    ],
  ],
]

/**
 * One list per kind and family: a BlockList matches an IPv4 address against its IPv6
 * rules too (as ::ffff:a.b.c.d), so each family is checked against its own ranges only.
 */
const rangesByKind = NON_PUBLIC_RANGES.map(([kind, ranges]) => {
  const lists = { ipv4: new BlockList(), ipv6: new BlockList() }
  for (const range of ranges) {
    const [network = '', prefix] = range.split('/')
    const family = isIP(network) === 6 ? 'ipv6' : 'ipv4'
    lists[family].addSubnet(network, Number(prefix), family)
  }
  return { kind, lists }
})

/** What kind of non-public address `address` is, or undefined for a public one. */
export function nonPublicKind(address: string): string | undefined {
  const family = isIP(address) === 6 ? 'ipv6' : 'ipv4'
  return rangesByKind.find(({ lists }) => lists[family].check(address, family))?.kind
}

const withArticle = (kind: string) => `${/^(IPv|[aeiou])/.test(kind) ? 'an' : 'a'} ${kind}`

/** A target the guard refuses, with the reason an admin or the delivery log reads. */
export class RefusedTarget extends Error {
  override name = 'RefusedTarget'
}

/** The rules of a URL itself, whatever it resolves to; the problem, or undefined. */
export function urlProblem(text: string): string | undefined {
  const url = URL.parse(text)
  if (!url || !/^https?:$/.test(url.protocol)) return 'must be an http:// or https:// URL'
  if (url.username !== '' || url.password !== '') {
    return 'must not hold credentials (a user name or password)'
  }
  if (url.hostname === '') return 'must name a host'
  return undefined
}

/** A URL's host as an address or a name: without the brackets of an IPv6 literal. */
const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1')

/**
 * Where webhooks may go. Unless private targets are allowed, a host must resolve only to
 * public addresses: checked when an endpoint is saved, and again at each delivery by the
 * lookup the connection itself uses, so the address checked is the address connected
 * to (a name that resolves elsewhere between the check and the connection gains nothing).
 */
export function createTargetGuard({
  allowPrivate,
  resolve,
}: {
  allowPrivate: boolean
  resolve: ResolveHost
}) {
  function refuseNonPublic(host: string, address: string): void {
    const kind = nonPublicKind(address)
    if (kind && !allowPrivate) {
      const resolved = host === address ? address : `${host} resolves to ${address}, which`
      throw new RefusedTarget(`${resolved} is ${withArticle(kind)} address`)
    }
  }

  /** The addresses of `host` once each has passed; a name with none is refused. */
  async function checkedAddresses(host: string) {
    if (isIP(host)) {
      refuseNonPublic(host, host)
      return [{ address: host, family: isIP(host) }]
    }
    let addresses: Awaited<ReturnType<ResolveHost>>
    try {
      addresses = await resolve(host)
    } catch {
      throw new RefusedTarget(`${host} does not resolve`)
    }
    if (addresses.length === 0) throw new RefusedTarget(`${host} does not resolve`)
    for (const { address } of addresses) refuseNonPublic(host, address)
    return addresses
  }

  /** For net.connect: answers only addresses that passed, as it asked (one, or all). */
  const lookup: LookupFunction = (hostname, options, callback) => {
    checkedAddresses(hostname).then(
      (addresses) => {
        const [first] = addresses
        if (options.all) callback(null, addresses)
        else callback(null, first?.address ?? '', first?.family ?? 4)
      },
      (error: Error) => callback(error as NodeJS.ErrnoException, '', 4),
    )
  }

  return {
    /** What is wrong with an endpoint's URL as it is saved, or undefined. */
    async problemAtSave(text: string): Promise<string | undefined> {
      const problem = urlProblem(text)
      if (problem || allowPrivate) return problem
      try {
        await checkedAddresses(hostOf(new URL(text)))
        return undefined
      } catch (error) {
        if (error instanceof RefusedTarget) return `must reach a public address: ${error.message}`
        throw error
      }
    },

    /**
     * Throws RefusedTarget for a URL whose host is an address that is not allowed (the
     * connection does no lookup for those); names are checked by `lookup`.
     */
    checkLiteral(url: URL): void {
      const host = hostOf(url)
      if (isIP(host)) refuseNonPublic(host, host)
    },

    lookup,
  }
}

export type TargetGuard = ReturnType<typeof createTargetGuard>
