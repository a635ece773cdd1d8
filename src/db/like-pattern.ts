/** An ILIKE pattern that matches text containing `text` literally: %, _ and \ in it match themselves. */
export const containing = (text: string) =>
  `%${text.replace(/[\\%_]/g, (character) => `\\${character}`)}%`
