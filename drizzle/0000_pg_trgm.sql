-- The products name search is a case-insensitive substring match, served by a trigram index.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
