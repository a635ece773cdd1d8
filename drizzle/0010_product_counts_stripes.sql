-- Every product write in a category updated one product_counts row and held its lock
-- until commit, so concurrent creates in one category queued behind each other's
-- commits. Each category's count is now spread over 16 stripes, one chosen by the
-- writing session: the total is still a sum over the category's rows.
ALTER TABLE "product_counts" ADD COLUMN "stripe" smallint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "product_counts" DROP CONSTRAINT "product_counts_pkey";--> statement-breakpoint
ALTER TABLE "product_counts" ADD CONSTRAINT "product_counts_category_stripe_pk" PRIMARY KEY("category","stripe");--> statement-breakpoint
CREATE OR REPLACE FUNCTION product_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  session_stripe smallint := pg_backend_pid() % 16;
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL THEN
    -- A stripe may go below zero; the category's sum over its stripes cannot.
    INSERT INTO product_counts (category, stripe, live) VALUES (OLD.category, session_stripe, -1)
    ON CONFLICT (category, stripe) DO UPDATE SET live = product_counts.live - 1;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.deleted_at IS NULL THEN
    INSERT INTO product_counts (category, stripe, live) VALUES (NEW.category, session_stripe, 1)
    ON CONFLICT (category, stripe) DO UPDATE SET live = product_counts.live + 1;
  END IF;
  RETURN NULL;
END $$;
