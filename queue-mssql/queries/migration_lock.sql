-- name: migration_lock
-- Runs inside the migration transaction (begun as its own batch, never inside this request):
-- an exclusive application lock named @P1, owned by the transaction, so the COMMIT or ROLLBACK
-- that ends the migration releases it (there is no migration_unlock statement). @P2: how long
-- to wait, in milliseconds (positive). The result is >= 0 when granted; -1 timeout, -2
-- cancelled, -3 deadlock victim, -999 bad parameters.
DECLARE @result INT;
EXEC @result = sp_getapplock @Resource = @P1, @LockMode = N'Exclusive',
    @LockOwner = N'Transaction', @LockTimeout = @P2;
SELECT @result AS result
