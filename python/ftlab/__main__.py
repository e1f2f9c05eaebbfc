from ftlab.cli import main

main()
