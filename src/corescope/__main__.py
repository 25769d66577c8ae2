from corescope.views.cli import main

main()
