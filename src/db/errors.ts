/** Postgres reports a broken unique constraint as SQLSTATE 23505, on either driver. */
export function isUniqueViolation(error: unknown): boolean {
  // drizzle wraps the driver's error; the SQLSTATE is on its cause.
  for (let current = error; current instanceof Error; current = current.cause) {
    if ((current as { code?: unknown }).code === '23505') return true
  }
  return false
}
