from reward_service.cli import main

main()
