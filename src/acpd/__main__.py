from acpd.daemon.cli import main

raise SystemExit(main())
